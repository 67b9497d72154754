-- KEYS[1] the record hash, KEYS[2] the token counter.
-- ARGV[1] the version the writer last observed ('' to create), ARGV[2] the record's JSON,
-- ARGV[3] its HolderIdentity, ARGV[4] its AcquireTime (JSON).
local cur = redis.call('HMGET', KEYS[1], 'ver', 'holder', 'acquired', 'token')
if ARGV[1] == '' then
  if cur[1] then return {1} end
else
  if not cur[1] then return {2} end
  if cur[1] ~= ARGV[1] then return {3} end
end
-- A new term starts when a holder takes the record from another (or from nobody) or
-- takes it anew (client-go keeps AcquireTime on a renewal). A release (no holder) and
-- a renewal keep the token of the term.
local tok = cur[4] or '0'
if ARGV[3] ~= '' and (ARGV[3] ~= cur[2] or ARGV[4] ~= cur[3]) then
  redis.call('INCR', KEYS[2])
  tok = redis.call('GET', KEYS[2])
end
local ver = redis.call('HINCRBY', KEYS[1], 'ver', 1)
redis.call('HSET', KEYS[1], 'rec', ARGV[2], 'holder', ARGV[3], 'acquired', ARGV[4], 'token', tok)
return {0, ver, tok}
