package listener

// commitScript is the Lua source of every fenced write of a RedisFence, the heart of the
// package: a feed's commit (the cursor moves), a closed set of writes, or a Lua body of
// the caller's.
//
//	KEYS: 1 fence record (the cursor hash), 2 audit stream, 3.. the keys the writes or
//	      the body touch
//	ARGV: 1 op id, 2 node, 3 token, 4 from, 5 to (both "": the cursor does not move),
//	      6 audit max length (0: unbounded), then either per write: command, index of its
//	      key in KEYS, n, then its n arguments; or "BODY", the body's Lua source, then
//	      the body's arguments
//	reply: {result, stored cursor, stored token[, value]} with result "ok",
//	       "stale-token", "cursor-conflict", "bad-argument" or "error"; on ok the stored
//	       values are the new ones and value is what a body returned; on error value is
//	       the body's error.
//
// Every number it is sent must be a decimal integer in canonical form — "0", or an
// optional '-' and digits without a leading zero: token, from and to within ±(2^63-1)
// (a token counter or a paging token may be anywhere in int64), max length, indexes,
// counts and increments within ±(2^53-1) (MaxExactInt). Lua numbers are doubles:
// tonumber() also takes "nan", "inf", "2.0e0", "0x10" and " 1", and above 2^53 two
// different integers compare equal, so the check is done on the string (its length, then
// its digits compared as a string), never on tonumber's result; tokens and cursors are
// compared the same way (cmpint), never as numbers. to must be above from.
// A write that breaks any of this is rejected as "bad-argument" and audited with the
// arguments as sent and an "error" field naming the first bad one; it changes nothing
// else.
//
// The token check comes first, so a stale writer is told it is stale even when its cursor
// is also out of date. Tokens and cursors, once validated, are compared exactly, on
// their digits. Every attempt is audited; numbers are copied into the audit entry as the
// strings the client sent (from and to only for a commit that moves the cursor), and the
// time is Redis's TIME in microseconds, built as a string (Lua's tostring would print
// 1.7e+15).
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
//
// A body cannot escape the fence (see RedisFence.Eval): it is compiled (loadstring) as a
// chunk of its own, so no text of it can run before the check or outside the function
// the script calls once the check has passed; every global but an allow list of pure
// libraries is shadowed by a nil local, so it reaches Redis only through the redis table
// it is given, whose call and pcall run only commands whose keys are all among its KEYS;
// and its KEYS are checked to be under the record's hash tag and none of the store's or
// the election's own. A body that does not compile is bad-argument, before the check. A
// body that raises an error (a refused command included) ends as "error": Redis does not
// roll back what it wrote before, so that is applied, and audited, under its token.
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
-- mutants: begin (experiment/mutants: the fence's comparison)
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
-- mutants: end
local function int18(s)
  if type(s) ~= 'string' then return false end
  local d = s
  if string.sub(s, 1, 1) == '-' then d = string.sub(s, 2) end
  if d == '0' then return s == '0' end
  return string.find(d, '^[1-9][0-9]*$') ~= nil and #d <= 18
end
local rcall, rpcall, sformat = redis.call, redis.pcall, string.format
-- compile checks a body's keys and compiles its source as a chunk of its own.
local function compile(src)
  -- What a body sees: the pure libraries; every other global is shadowed below.
  local visible = {assert = 1, error = 1, ipairs = 1, next = 1, pairs = 1, pcall = 1, select = 1,
    tonumber = 1, tostring = 1, type = 1, unpack = 1, xpcall = 1, math = 1, string = 1, table = 1,
    cjson = 1, cmsgpack = 1, bit = 1, struct = 1, _VERSION = 1, redis = 1, KEYS = 1, ARGV = 1}
  if type(src) ~= 'string' then return nil, 'body: no source' end
  local prefix = string.match(KEYS[1], '^({[^{}]+}:)cursor$')
  if prefix == nil then return nil, 'body: fence record ' .. KEYS[1] .. ' has no hash tag' end
  local own = {cursor = 1, audit = 1, lock = 1, token = 1}
  local declared = {}
  for i = 3, #KEYS do
    local k = KEYS[i]
    local rest = string.sub(k, #prefix + 1)
    if string.sub(k, 1, #prefix) ~= prefix or rest == '' or own[rest] or string.find(rest, '[{}]') then
      return nil, 'body: key ' .. k .. ' is not a key of its own under ' .. prefix
    end
    declared[k] = true
  end
  local hide = {}
  for name in pairs(_G) do
    if type(name) == 'string' and not visible[name] and string.find(name, '^[%a_][%w_]*$') then
      hide[#hide + 1] = name
    end
  end
  local head = 'local redis, KEYS, ARGV = ...; '
  if #hide > 0 then head = 'local ' .. table.concat(hide, ', ') .. '; ' .. head end
  local f, err = loadstring(head .. src, '=body')
  if f == nil then return nil, 'body: ' .. err end
  return {f = f, declared = declared}, nil
end
-- sandbox is the redis table a body gets: call and pcall refuse any command not in its
-- lists or on a key not among the body's KEYS.
local function sandbox(declared)
  -- The commands a body may run: those whose one key is their first argument, and those
  -- whose every argument is a key.
  local onekey, allkeys = {}, {DEL = 1, UNLINK = 1, EXISTS = 1}
  for c in string.gmatch([[GET SET SETNX SETEX PSETEX GETSET GETDEL GETEX APPEND STRLEN INCR
    INCRBY INCRBYFLOAT DECR DECRBY GETRANGE SETRANGE HGET HSET HSETNX HMSET HMGET HDEL HINCRBY
    HINCRBYFLOAT HGETALL HKEYS HVALS HLEN HEXISTS HSTRLEN LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP
    LRANGE LLEN LINDEX LSET LREM LTRIM LINSERT LPOS SADD SREM SISMEMBER SMISMEMBER SMEMBERS SCARD
    SPOP SRANDMEMBER ZADD ZREM ZINCRBY ZSCORE ZMSCORE ZRANGE ZREVRANGE ZRANGEBYSCORE
    ZREVRANGEBYSCORE ZRANK ZREVRANK ZCARD ZCOUNT ZREMRANGEBYSCORE ZREMRANGEBYRANK ZPOPMIN ZPOPMAX
    XADD XRANGE XREVRANGE XLEN XTRIM XDEL EXPIRE PEXPIRE EXPIREAT PEXPIREAT PERSIST TTL PTTL
    TYPE]], '%u+') do onekey[c] = 1 end
  local function guard(cmd, ...)
    local c = string.upper(tostring(cmd))
    local n = select('#', ...)
    if not onekey[c] and not allkeys[c] then error('fence: ' .. c .. ' is not a command a body may run', 0) end
    if n == 0 then error('fence: ' .. c .. ' without a key', 0) end
    local last = 1
    if allkeys[c] then last = n end
    for i = 1, last do
      local k = select(i, ...)
      if not declared[k] then error('fence: ' .. c .. ' on ' .. tostring(k) .. ', not one of the KEYS of the body', 0) end
    end
  end
  return {
    call = function(cmd, ...)
      local ok, err = pcall(guard, cmd, ...)
      if not ok then error(err, 2) end
      return rcall(cmd, ...)
    end,
    pcall = function(cmd, ...)
      local ok, err = pcall(guard, cmd, ...)
      if not ok then return {err = err} end
      return rpcall(cmd, ...)
    end,
    error_reply = redis.error_reply, status_reply = redis.status_reply, sha1hex = redis.sha1hex,
  }
end
-- mutants: begin (the stored record and the check against it)
local rec = rcall('HMGET', KEYS[1], 'cursor', 'token')
local cursor = rec[1] or '0'
local stored = rec[2] or '0'
if not int64(cursor) or not int64(stored) then
  return redis.error_reply('ERR listener: stored cursor record is not an integer pair')
end
-- mutants: end
local bad = nil
local writes = {}
local body = nil
local moves = ARGV[4] ~= '' or ARGV[5] ~= ''
local arity = {HINCRBY = {2, 2}, HSET = {2, 2}, SET = {1, 1}, RPUSH = {1, 1000}, XADD = {2, 2000}, DEL = {0, 0}}
if #ARGV < 6 then
  bad = 'argument count ' .. #ARGV
elseif not int64(ARGV[3]) then bad = 'token'
elseif moves and not int64(ARGV[4]) then bad = 'from'
elseif moves and not int64(ARGV[5]) then bad = 'to'
elseif moves and cmpint(ARGV[5], ARGV[4]) <= 0 then bad = 'to is not above from'
elseif not int(ARGV[6]) or tonumber(ARGV[6]) < 0 then bad = 'audit max length'
elseif ARGV[7] == 'BODY' and moves then bad = 'a body cannot move the cursor'
elseif ARGV[7] == 'BODY' then
  body, bad = compile(ARGV[8])
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
-- mutants: begin
local result = 'bad-argument'
if bad == nil then
result = 'ok'
if cmpint(ARGV[3], stored) < 0 then
  result = 'stale-token'
elseif moves and cmpint(ARGV[4], cursor) ~= 0 then
  result = 'cursor-conflict'
end
end
-- mutants: end
if result == 'ok' then
  local kind, fields, reset = {}, {}, {}
  local want = {HINCRBY = 'hash', HSET = 'hash', RPUSH = 'list', XADD = 'stream'}
  for n, w in ipairs(writes) do
    local t = kind[w.key]
    if t == nil then t = rcall('TYPE', w.key)['ok']; kind[w.key] = t end
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
          if not reset[w.key] then v = rcall('HGET', w.key, f) end
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
-- Applied: the writes (checked above, they cannot fail), or the body.
local value = nil
if result == 'ok' and body ~= nil then
  local bkeys, bargs = {}, {}
  for i = 3, #KEYS do bkeys[#bkeys + 1] = KEYS[i] end
  for i = 9, #ARGV do bargs[#bargs + 1] = ARGV[i] end
  local ok, v = pcall(body.f, sandbox(body.declared), bkeys, bargs)
  value = v
  if not ok then result, value = 'error', tostring(v) end
elseif result == 'ok' then
  for _, w in ipairs(writes) do
    if w.cmd == 'XADD' then
      rcall('XADD', w.key, '*', unpack(ARGV, w.first, w.last))
    else
      rcall(w.cmd, w.key, unpack(ARGV, w.first, w.last))
    end
  end
end
local t = rcall('TIME')
local xadd = {'XADD', KEYS[2]}
if int(ARGV[6]) and tonumber(ARGV[6]) > 0 then
  xadd[3], xadd[4], xadd[5] = 'MAXLEN', '~', ARGV[6]
end
xadd[#xadd + 1] = '*'
local fields = {'op', ARGV[1] or '', 'node', ARGV[2] or '', 'token', ARGV[3] or ''}
if moves then
  for _, v in ipairs({'from', ARGV[4] or '', 'to', ARGV[5] or ''}) do fields[#fields + 1] = v end
end
for _, v in ipairs({'result', result, 'time', t[1] .. sformat('%06d', tonumber(t[2]))}) do
  fields[#fields + 1] = v
end
if result == 'bad-argument' or result == 'error' then
  fields[#fields + 1], fields[#fields + 2] = 'error', bad or value
end
for _, v in ipairs(fields) do xadd[#xadd + 1] = v end
-- mutants: begin (the audit entry and the record's update)
rcall(unpack(xadd))
if result ~= 'ok' and result ~= 'error' then
  return {result, cursor, stored}
end
if moves then
  rcall('HSET', KEYS[1], 'cursor', ARGV[5], 'token', ARGV[3])
  return {result, ARGV[5], ARGV[3], value}
end
rcall('HSET', KEYS[1], 'token', ARGV[3])
return {result, cursor, ARGV[3], value}
-- mutants: end
`
