package listener

// commitScript is the Lua source of the fenced commit, the heart of the package.
//
//	KEYS: 1 cursor hash, 2 audit stream, 3.. the keys the batch's writes touch
//	ARGV: 1 op id, 2 node, 3 token, 4 from, 5 to, 6 audit max length (0: unbounded),
//	      then per write: command, index of its key in KEYS, n, then its n arguments
//	reply: {result, stored cursor, stored token} with result "ok", "stale-token",
//	       "cursor-conflict" or "bad-argument"; on ok the stored values are the new ones.
//
// Every number it is sent must be a decimal integer in canonical form — "0", or an
// optional '-' and digits without a leading zero: token, from and to within ±(2^63-1)
// (a token counter or a paging token may be anywhere in int64), max length, indexes,
// counts and increments within ±(2^53-1) (MaxExactInt). Lua numbers are doubles:
// tonumber() also takes "nan", "inf", "2.0e0", "0x10" and " 1", and above 2^53 two
// different integers compare equal, so the check is done on the string (its length, then
// its digits compared as a string), never on tonumber's result; tokens and cursors are
// compared the same way (cmpint), never as numbers. to must be above from.
// A commit that breaks any of this is rejected as "bad-argument" and audited with the
// arguments as sent and an "error" field naming the first bad one; it changes nothing
// else.
//
// The token check comes first, so a stale writer is told it is stale even when its cursor
// is also out of date. Tokens and cursors, once validated, are compared exactly, on
// their digits. Every attempt is audited; numbers are copied into the audit entry as the
// strings the client sent, and the time is Redis's TIME in microseconds, built as a string
// (Lua's tostring would print 1.7e+15).
//
// Everything that can fail is checked before the first write, so a commit is applied
// whole or not at all (Redis does not roll a script back on an error): the writes are
// walked once in order, tracking each key's type (TYPE, then what earlier writes of the
// batch make of it) and each HINCRBY'd field's value (HGET, or what an earlier HSET, DEL
// or SET of the batch left). A write to a key of another type, or an HINCRBY of a field
// that is not an integer of at most 18 digits or whose increments so far in the batch sum
// beyond ±(2^53-1), makes the commit bad-argument: HINCRBY then cannot overflow. A stored
// cursor record that is not made of such integers (written by something other than this
// script) is an error reply, with nothing written: an operator must look.
const commitScript = `
local function int(s)
  if type(s) ~= 'string' then return false end
  local d = s
  if string.sub(s, 1, 1) == '-' then d = string.sub(s, 2) end
  if d == '0' then return s == '0' end
  if not string.find(d, '^[1-9][0-9]*$') then return false end
  return #d < 16 or (#d == 16 and d <= '9007199254740991')
end
local function int64(s)
  if type(s) ~= 'string' then return false end
  local d = s
  if string.sub(s, 1, 1) == '-' then d = string.sub(s, 2) end
  if d == '0' then return s == '0' end
  if not string.find(d, '^[1-9][0-9]*$') then return false end
  return #d < 19 or (#d == 19 and d <= '9223372036854775807')
end
-- cmpint compares two canonical integers (int64 checked): -1, 0 or 1.
local function cmpint(a, b)
  local na, nb = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  if na ~= nb then
    if na then return -1 end
    return 1
  end
  if a == b then return 0 end
  local r = 1
  if #a < #b or (#a == #b and a < b) then r = -1 end
  if na then return -r end
  return r
end
local function int18(s)
  if type(s) ~= 'string' then return false end
  local d = s
  if string.sub(s, 1, 1) == '-' then d = string.sub(s, 2) end
  if d == '0' then return s == '0' end
  return string.find(d, '^[1-9][0-9]*$') ~= nil and #d <= 18
end
local rec = redis.call('HMGET', KEYS[1], 'cursor', 'token')
local cursor = rec[1] or '0'
local stored = rec[2] or '0'
if not int64(cursor) or not int64(stored) then
  return redis.error_reply('ERR listener: stored cursor record is not an integer pair')
end
local bad = nil
local writes = {}
local arity = {HINCRBY = {2, 2}, HSET = {2, 2}, SET = {1, 1}, RPUSH = {1, 1000}, XADD = {2, 2000}, DEL = {0, 0}}
if #ARGV < 6 then
  bad = 'argument count ' .. #ARGV
elseif not int64(ARGV[3]) then bad = 'token'
elseif not int64(ARGV[4]) then bad = 'from'
elseif not int64(ARGV[5]) then bad = 'to'
elseif cmpint(ARGV[5], ARGV[4]) <= 0 then bad = 'to is not above from'
elseif not int(ARGV[6]) or tonumber(ARGV[6]) < 0 then bad = 'audit max length'
else
  local i = 7
  while i <= #ARGV do
    local n = #writes + 1
    local cmd, a = ARGV[i], arity[ARGV[i]]
    if a == nil then bad = 'write #' .. n .. ': not a write command'; break end
    if not int(ARGV[i + 1]) or tonumber(ARGV[i + 1]) < 3 or tonumber(ARGV[i + 1]) > #KEYS then
      bad = 'write #' .. n .. ': key index'; break
    end
    local na = ARGV[i + 2]
    if not int(na) or tonumber(na) < a[1] or tonumber(na) > a[2] or i + 2 + tonumber(na) > #ARGV then
      bad = 'write #' .. n .. ': argument count'; break
    end
    na = tonumber(na)
    if cmd == 'XADD' and na % 2 ~= 0 then bad = 'write #' .. n .. ': argument count'; break end
    if cmd == 'HINCRBY' and not int(ARGV[i + 4]) then bad = 'write #' .. n .. ': increment'; break end
    writes[n] = {cmd = cmd, key = KEYS[tonumber(ARGV[i + 1])], first = i + 3, last = i + 2 + na}
    i = i + 3 + na
  end
end
local result = 'bad-argument'
if bad == nil then
result = 'ok'
if cmpint(ARGV[3], stored) < 0 then
  result = 'stale-token'
elseif cmpint(ARGV[4], cursor) ~= 0 then
  result = 'cursor-conflict'
end
end
if result == 'ok' then
  local kind, fields, reset = {}, {}, {}
  local want = {HINCRBY = 'hash', HSET = 'hash', RPUSH = 'list', XADD = 'stream'}
  for n, w in ipairs(writes) do
    local t = kind[w.key]
    if t == nil then t = redis.call('TYPE', w.key)['ok']; kind[w.key] = t end
    local wt = want[w.cmd]
    if wt and t ~= 'none' and t ~= wt then
      bad = 'write #' .. n .. ': ' .. w.key .. ' holds a ' .. t; break
    end
    if w.cmd == 'DEL' or w.cmd == 'SET' then
      kind[w.key] = (w.cmd == 'DEL') and 'none' or 'string'
      fields[w.key], reset[w.key] = {}, true
    else
      kind[w.key] = wt
    end
    if w.cmd == 'HSET' or w.cmd == 'HINCRBY' then
      local fs = fields[w.key] or {}
      fields[w.key] = fs
      local f = ARGV[w.first]
      if w.cmd == 'HSET' then
        fs[f] = {base = ARGV[w.first + 1], sum = 0}
      else
        local st = fs[f]
        if st == nil then
          local v = false
          if not reset[w.key] then v = redis.call('HGET', w.key, f) end
          st = {base = v or '0', sum = 0}
          fs[f] = st
        end
        if not int18(st.base) then
          bad = 'write #' .. n .. ': field ' .. f .. ' of ' .. w.key .. ' is not an integer of at most 18 digits'; break
        end
        st.sum = st.sum + tonumber(ARGV[w.first + 1])
        if math.abs(st.sum) > 9007199254740991 then
          bad = 'write #' .. n .. ': increments of ' .. f .. ' of ' .. w.key .. ' sum beyond 2^53-1'; break
        end
      end
    end
  end
  if bad ~= nil then result = 'bad-argument' end
end
local t = redis.call('TIME')
local now = t[1] .. string.format('%06d', tonumber(t[2]))
local xadd = {'XADD', KEYS[2]}
if int(ARGV[6]) and tonumber(ARGV[6]) > 0 then
  xadd[3], xadd[4], xadd[5] = 'MAXLEN', '~', ARGV[6]
end
xadd[#xadd + 1] = '*'
if result == 'bad-argument' then
  for _, v in ipairs({'op', ARGV[1] or '', 'node', ARGV[2] or '', 'token', ARGV[3] or '',
      'from', ARGV[4] or '', 'to', ARGV[5] or '', 'result', result, 'time', now, 'error', bad}) do
    xadd[#xadd + 1] = v
  end
  redis.call(unpack(xadd))
  return {result, cursor, stored}
end
for _, v in ipairs({'op', ARGV[1], 'node', ARGV[2], 'token', ARGV[3], 'from', ARGV[4], 'to', ARGV[5],
    'result', result, 'time', now}) do
  xadd[#xadd + 1] = v
end
redis.call(unpack(xadd))
if result ~= 'ok' then
  return {result, cursor, stored}
end
for _, w in ipairs(writes) do
  if w.cmd == 'XADD' then
    redis.call('XADD', w.key, '*', unpack(ARGV, w.first, w.last))
  else
    redis.call(w.cmd, w.key, unpack(ARGV, w.first, w.last))
  end
end
redis.call('HSET', KEYS[1], 'cursor', ARGV[5], 'token', ARGV[3])
return {'ok', ARGV[5], ARGV[3]}
`
