-- renew: extend the lease only while it still holds this term's value.
-- KEYS: lock (a second key is ignored). ARGV: "<instance>:<token>", lease TTL in ms.
-- Returns 1 if extended, 0 if the lease is no longer ours.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
