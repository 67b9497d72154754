package listener

// CommitScript is the Lua source of the fenced commit, the heart of the package.
//
// Contract (shared by every script a StoreConfig.Script may substitute, so that
// deliberately broken variants can reuse RedisStore's recording and parsing):
//
//	KEYS: 1 cursor hash, 2 balances hash, 3 sink list, 4 audit stream
//	ARGV: 1 op id, 2 node, 3 token, 4 from, 5 to,
//	      then four per event: id, from account, to account, amount
//	reply: {result, stored cursor, stored token} with result "ok", "stale-token" or
//	       "cursor-conflict"; on ok the stored values are the new ones.
//
// The token check comes first, so a stale writer is told it is stale even when its cursor
// is also out of date. Tokens and cursors are compared as numbers (Lua doubles: exact up to
// 2^53). Every attempt is audited; numbers are copied into the audit entry as the strings
// the client sent, and the time is Redis's TIME in microseconds, built as a string (Lua's
// tostring would print 1.7e+15). A batch's balance changes are summed per account before
// the HINCRBYs: the script runs atomically, so that is the same as one HINCRBY per payment.
// An account that took part gets its field even if its net change is 0, so the balances
// hash has exactly the accounts of the applied events.
const CommitScript = `
if #ARGV < 9 or (#ARGV - 5) % 4 ~= 0 then
  return redis.error_reply('ERR listener: malformed commit arguments')
end
local rec = redis.call('HMGET', KEYS[1], 'cursor', 'token')
local cursor = rec[1] or '0'
local stored = rec[2] or '0'
local result = 'ok'
if tonumber(ARGV[3]) < tonumber(stored) then
  result = 'stale-token'
elseif tonumber(ARGV[4]) ~= tonumber(cursor) then
  result = 'cursor-conflict'
end
local t = redis.call('TIME')
redis.call('XADD', KEYS[4], '*', 'op', ARGV[1], 'node', ARGV[2], 'token', ARGV[3],
  'from', ARGV[4], 'to', ARGV[5], 'result', result,
  'time', t[1] .. string.format('%06d', tonumber(t[2])))
if result ~= 'ok' then
  return {result, cursor, stored}
end
local delta, order, ids = {}, {}, {}
for i = 6, #ARGV, 4 do
  ids[#ids + 1] = ARGV[i]
  local a = tonumber(ARGV[i + 3])
  local f, to = ARGV[i + 1], ARGV[i + 2]
  if delta[f] == nil then delta[f] = 0; order[#order + 1] = f end
  if delta[to] == nil then delta[to] = 0; order[#order + 1] = to end
  delta[f] = delta[f] - a
  delta[to] = delta[to] + a
end
for _, acct in ipairs(order) do
  redis.call('HINCRBY', KEYS[2], acct, delta[acct])
end
for i = 1, #ids, 1000 do
  redis.call('RPUSH', KEYS[3], unpack(ids, i, math.min(i + 999, #ids)))
end
redis.call('HSET', KEYS[1], 'cursor', ARGV[5], 'token', ARGV[3])
return {'ok', ARGV[5], ARGV[3]}
`
