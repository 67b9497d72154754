-- commit: the fenced write of the node protocol (docs/node-protocol.md), one atomic step.
-- KEYS: cursor, balances, sink, audit. ARGV: op id, node, token, from, to, fenced ('1' or
-- '0'), then id, from account, to account, amount per event.
-- Returns {result, cursor, token}: result 'ok' (then the new cursor and token), or
-- 'stale-token' / 'cursor-conflict' (then the stored ones), and nothing is applied.
-- With fenced '1' a token below the stored one, or a from that is not the stored cursor,
-- is refused; fenced '0' skips both comparisons: the broken twin the harness must catch.
-- Every attempt is audited.
local rec = redis.call('HMGET', KEYS[1], 'cursor', 'token')
local cursor, stored = rec[1] or '0', rec[2] or '0'
local result = 'ok'
if ARGV[6] == '1' then
  if tonumber(ARGV[3]) < tonumber(stored) then result = 'stale-token'
  elseif tonumber(ARGV[4]) ~= tonumber(cursor) then result = 'cursor-conflict' end
end
local t = redis.call('TIME')
redis.call('XADD', KEYS[4], '*', 'op', ARGV[1], 'node', ARGV[2], 'token', ARGV[3], 'from', ARGV[4],
  'to', ARGV[5], 'result', result, 'time', t[1] .. string.format('%06d', tonumber(t[2])))
if result ~= 'ok' then return {result, cursor, stored} end
for i = 7, #ARGV, 4 do
  redis.call('HINCRBY', KEYS[2], ARGV[i + 1], '-' .. ARGV[i + 3])
  redis.call('HINCRBY', KEYS[2], ARGV[i + 2], ARGV[i + 3])
  redis.call('RPUSH', KEYS[3], ARGV[i])
end
redis.call('HSET', KEYS[1], 'cursor', ARGV[5], 'token', ARGV[3])
return {'ok', ARGV[5], ARGV[3]}
