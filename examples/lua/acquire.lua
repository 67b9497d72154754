-- acquire: the lease and its fencing token in one step (docs/node-protocol.md).
-- KEYS: lock, token counter. ARGV: instance id, lease TTL in ms.
-- Returns the new token, or 0 when the lease is held. The counter is INCRed only when
-- the lease is taken, so each token names one term.
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local t = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. string.format('%d', t), 'PX', ARGV[2])
return t
