package listener

// CommitScript is the Lua source of the fenced commit, the heart of the package.
//
// Contract (shared by every script a StoreConfig.Script may substitute, so that
// deliberately broken variants can reuse RedisStore's recording and parsing):
//
//	KEYS: 1 cursor hash, 2 balances hash, 3 sink list, 4 audit stream
//	ARGV: 1 op id, 2 node, 3 token, 4 from, 5 to,
//	      then four per event: id, from account, to account, amount
//	reply: {result, stored cursor, stored token} with result "ok", "stale-token",
//	       "cursor-conflict" or "bad-argument"; on ok the stored values are the new ones.
//
// Every number it is sent (token, from, to, each event's id and amount) must be a decimal
// integer in canonical form — "0", or an optional '-' and digits without a leading zero —
// within ±(2^53-1) (MaxExactInt). Lua numbers are doubles: tonumber() also takes "nan",
// "inf", "2.0e0", "0x10" and " 1", and above 2^53 two different integers compare equal,
// so the check is done on the string (its length, then its digits compared as a string),
// never on tonumber's result. The batch must also be well formed: ids strictly
// increasing after from, to equal to the last id, each account's net change within
// ±(2^53-1) and every touched balance short enough (at most 18 digits) that HINCRBY
// cannot overflow. A commit that breaks any of this is rejected as "bad-argument" and
// audited with the arguments as sent and an "error" field naming the first bad one; it
// changes nothing else. Everything that can fail is checked before the first write, so a
// commit is applied whole or not at all (Redis does not roll a script back on an error).
// A stored cursor record that is not made of such integers (written by something other
// than this script) is an error reply, with nothing written: an operator must look.
//
// The token check comes first, so a stale writer is told it is stale even when its cursor
// is also out of date. Tokens and cursors, once validated, are compared as numbers
// (exact). Every attempt is audited; numbers are copied into the audit entry as the
// strings the client sent, and the time is Redis's TIME in microseconds, built as a string
// (Lua's tostring would print 1.7e+15). A batch's balance changes are summed per account
// before the HINCRBYs, which get them formatted with %d (tostring would print large
// numbers in exponent form, which HINCRBY refuses): the script runs atomically, so that is
// the same as one HINCRBY per payment. An account that took part gets its field even if
// its net change is 0, so the balances hash has exactly the accounts of the applied events.
const CommitScript = `
local function int(s)
  if type(s) ~= 'string' then return false end
  local d = s
  if string.sub(s, 1, 1) == '-' then d = string.sub(s, 2) end
  if d == '0' then return s == '0' end
  if not string.find(d, '^[1-9][0-9]*$') then return false end
  return #d < 16 or (#d == 16 and d <= '9007199254740991')
end
local rec = redis.call('HMGET', KEYS[1], 'cursor', 'token')
local cursor = rec[1] or '0'
local stored = rec[2] or '0'
if not int(cursor) or not int(stored) then
  return redis.error_reply('ERR listener: stored cursor record is not an integer pair')
end
local bad = nil
local delta, order, ids = {}, {}, {}
if #ARGV < 9 or (#ARGV - 5) % 4 ~= 0 then
  bad = 'argument count ' .. #ARGV
elseif not int(ARGV[3]) then bad = 'token'
elseif not int(ARGV[4]) then bad = 'from'
elseif not int(ARGV[5]) then bad = 'to'
else
  local prev = tonumber(ARGV[4])
  for i = 6, #ARGV, 4 do
    if not int(ARGV[i]) then bad = 'event id #' .. (i - 2) / 4; break end
    if not int(ARGV[i + 3]) then bad = 'amount #' .. (i - 2) / 4; break end
    local id = tonumber(ARGV[i])
    if id <= prev then bad = 'event id #' .. (i - 2) / 4 .. ' not above the previous'; break end
    prev = id
    ids[#ids + 1] = ARGV[i]
    local a = tonumber(ARGV[i + 3])
    local f, to = ARGV[i + 1], ARGV[i + 2]
    if delta[f] == nil then delta[f] = 0; order[#order + 1] = f end
    if delta[to] == nil then delta[to] = 0; order[#order + 1] = to end
    delta[f] = delta[f] - a
    delta[to] = delta[to] + a
    if math.abs(delta[f]) > 9007199254740991 or math.abs(delta[to]) > 9007199254740991 then
      bad = 'amounts: net change of an account beyond 2^53-1'; break
    end
  end
  if bad == nil and ARGV[#ARGV - 3] ~= ARGV[5] then bad = 'to is not the last event id' end
end
local result = 'bad-argument'
if bad == nil then
result = 'ok'
if tonumber(ARGV[3]) < tonumber(stored) then
  result = 'stale-token'
elseif tonumber(ARGV[4]) ~= tonumber(cursor) then
  result = 'cursor-conflict'
end
end
if result == 'ok' then
  local bal = redis.call('HMGET', KEYS[2], unpack(order))
  for i, b in ipairs(bal) do
    if b and (not string.find(b, '^%-?[0-9]+$') or #string.gsub(b, '%-', '') > 18) then
      result, bad = 'bad-argument', 'balance of ' .. order[i] .. ' is not an integer of at most 18 digits'; break
    end
  end
end
local t = redis.call('TIME')
local now = t[1] .. string.format('%06d', tonumber(t[2]))
if result == 'bad-argument' then
  redis.call('XADD', KEYS[4], '*', 'op', ARGV[1] or '', 'node', ARGV[2] or '', 'token', ARGV[3] or '',
    'from', ARGV[4] or '', 'to', ARGV[5] or '', 'result', result, 'time', now, 'error', bad)
  return {result, cursor, stored}
end
redis.call('XADD', KEYS[4], '*', 'op', ARGV[1], 'node', ARGV[2], 'token', ARGV[3],
  'from', ARGV[4], 'to', ARGV[5], 'result', result, 'time', now)
if result ~= 'ok' then
  return {result, cursor, stored}
end
for _, acct in ipairs(order) do
  redis.call('HINCRBY', KEYS[2], acct, string.format('%d', delta[acct]))
end
for i = 1, #ids, 1000 do
  redis.call('RPUSH', KEYS[3], unpack(ids, i, math.min(i + 999, #ids)))
end
redis.call('HSET', KEYS[1], 'cursor', ARGV[5], 'token', ARGV[3])
return {'ok', ARGV[5], ARGV[3]}
`
