-- release: delete the lease only while it still holds this term's value, and publish the
-- release notice so that a hot standby takes over at once instead of at its next poll.
-- KEYS: lock, release channel ("{NAME}:released"). ARGV: "<instance>:<token>" (a second
-- argument is ignored). Returns 1 if released, 0 if the lease was no longer ours.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1]); redis.call('PUBLISH', KEYS[2], ARGV[1]); return 1
end
return 0
