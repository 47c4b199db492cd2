package redisstore

// luaTake is the run's rate bucket (store.Rate.Take in Lua), the one
// reading of it that scriptBegin and scriptAdmit share: take(rl, rlt,
// now, rate, burst) is given the hash fields rl (the calls held) and rlt
// (when, in microseconds; both nil for a full bucket) and returns the
// fields to write back after taking one call, or nil, nil and the
// microseconds until the bucket holds a call.
const luaTake = `
local function take(rl, rlt, now, rate, burst)
  local tokens, at = burst, now
  if rl and rlt then
    tokens, at = tonumber(rl), tonumber(rlt)
    if now > at then
      tokens = math.min(burst, tokens + (now - at) * rate / 1e6)
      at = now
    end
  end
  if tokens < 1 then return nil, nil, math.ceil((1 - tokens) * 1e6 / rate) end
  return string.format('%.17g', tokens - 1), string.format('%d', at), nil
end
`

// scriptBegin starts an output: it checks the token hash, takes a call
// from the run's rate bucket (store.Rate.Take in Lua, on the hash fields
// rl, the calls held, and rlt, when in microseconds) and the next output
// number, and under a cap of marks takes an in-flight mark for the
// output if the run holds fewer than the cap (counted again without the
// expired ones, dropped, when it holds the cap); it
// reads the run as scriptGet does (luaReadRun), one HMGET before any
// write. KEYS: run, calls, order, result, flight (sorted set: output
// number -> expiry in microseconds). ARGV: now_us, rate (calls a second;
// <= 0 no limit), burst, token hash ("" not checked), max seq (<= 0 no
// cap), max in flight (<= 0 no cap, no mark), lease (microseconds).
// Returns scriptGet's reply with a fifth element, 1 when the output took
// a mark, else 0; -1 (no live run, or another token), -3 (max seq
// numbers taken) or {-2, microseconds until the bucket holds a call},
// the refusals with nothing written.
var scriptBegin = runScript(luaTake + `
local run, flight = KEYS[1], KEYS[5]
local now = tonumber(ARGV[1])
local f = redis.call('HMGET', run, 'tok', 'expus', 'seq', 'rl', 'rlt', 'pxat')
if not f[1] or (f[2] and tonumber(f[2]) <= now) then return -1 end
if ARGV[4] ~= '' and f[1] ~= ARGV[4] then return -1 end
local seq, maxSeq = tonumber(f[3] or '0'), tonumber(ARGV[5])
if maxSeq > 0 and seq >= maxSeq then return -3 end
local rate, burst = tonumber(ARGV[2]), tonumber(ARGV[3])
local nseq = string.format('%d', seq + 1)
if rate > 0 then
  local tokens, at, wait = take(f[4], f[5], now, rate, burst)
  if wait then return {-2, wait} end
  redis.call('HSET', run, 'rl', tokens, 'rlt', at, 'seq', nseq)
else
  redis.call('HSET', run, 'seq', nseq)
end
local marked, maxFlight = 0, tonumber(ARGV[6])
if maxFlight > 0 then
  local held = redis.call('ZCARD', flight)
  if held >= maxFlight then
    redis.call('ZREMRANGEBYSCORE', flight, '-inf', ARGV[1])
    held = redis.call('ZCARD', flight)
  end
  if held < maxFlight then
    redis.call('ZADD', flight, string.format('%d', now + tonumber(ARGV[7])), nseq)
    if held == 0 and f[6] then redis.call('PEXPIREAT', flight, f[6]) end
    marked = 1
  end
end
local reply = ` + luaReadRun + `
reply[5] = marked
return reply
`)

// scriptUnmark drops an in-flight mark: it only frees data, so it runs
// when Redis is full. KEYS: flight. ARGV: the output number.
var scriptUnmark = flagged(freesData, `
redis.call('ZREM', KEYS[1], ARGV[1])
return 0
`)

// scriptFinish ends a tool output in one step: it mints as scriptMint
// does, sets the model-context label if it is still the one the caller
// joined into (compare and set), appends the call record with the
// minted tokens written into it, and drops the output's in-flight mark.
// Every refusal comes before any write.
// With chain arguments it extends the run's chain too (luaChainCheck),
// refusing when the chain or the tokens are not the ones the record was
// sealed with.
// KEYS: run, handles, order, calls, flight, chain.
// ARGV: now_us, max handles, max bytes, k, observe ('1' or '0'), old label,
// new label ("" = empty), the output number whose mark to drop ("" =
// none), luaChainCheck's four (ARGV[9] to ARGV[12]), the token suffixes
// the record was sealed with, one after another, n (the record's parts),
// the n parts of the record (the token
// suffix of the i-th referent goes between parts i and i+1), then the
// referents as scriptMint takes them.
// Returns {0, the suffixes one after another}, 2 (handle limits; nothing
// written), 3 (out of
// candidates; nothing written), {4, label} (the label is no longer the
// old one: nothing written, join again on it) or luaChainCheck's {5, ...}.
var scriptFinish = mintScript(luaChain + `
local run, handles, order, calls, flight, chain = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local f = redis.call('HMGET', run, 'tok', 'expus', 'hb', 'pxat', 'mc')
if not f[1] or (f[2] and tonumber(f[2]) <= tonumber(ARGV[1])) then return -1 end
local max, maxBytes, k = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local observe, old, new = ARGV[5] == '1', ARGV[6], ARGV[7]
if observe then
  local cur = f[5] or ''
  if cur ~= old then return {4, cur} end
end
local P = 14 -- ARGV[P]: n
local nparts = tonumber(ARGV[P])
local out, newRefs, bytes = pick(handles, P + 1 + nparts, k)
if not out then return 3 end
local moved = chainMoved(run, 9, table.concat(out, '', 2), ARGV[13])
if moved then return moved end
local refused = mint(run, handles, order, newRefs, bytes, max, maxBytes, f[3], f[4])
if refused then return refused end
if observe and new ~= old then
  if new == '' then
    redis.call('HDEL', run, 'mc')
  else
    redis.call('HSET', run, 'mc', new)
  end
end
local rec = {ARGV[P + 1]}
for i = 2, #out do
  rec[#rec + 1] = out[i]
  rec[#rec + 1] = ARGV[P + i]
end
if redis.call('RPUSH', calls, table.concat(rec)) == 1 and f[4] then
  redis.call('PEXPIREAT', calls, f[4])
end
chainExtend(run, chain, 9)
if ARGV[8] ~= '' then redis.call('ZREM', flight, ARGV[8]) end
return {0, table.concat(out, '', 2)}
`)

// scriptAdmit is Begin of a request that is not an output
// (store.Begin.NoOutput): it checks the token hash and takes a call
// from the run's rate bucket as scriptBegin does, and nothing else, and
// reads the run as scriptGet does. It writes only the bucket's two
// fields of the run's hash (a few dozen bytes a run), so it runs when
// Redis is full, as the reads it stands in for do.
// KEYS: run, calls, order, result. ARGV: now_us, rate (calls a second;
// <= 0 no limit), burst, token hash ("" not checked).
// Returns scriptGet's reply, -1 (no live run, or another token) or
// {-2, microseconds until the bucket holds a call}, the refusals with
// nothing written.
var scriptAdmit = flagged(freesData, luaLive+luaTake+`
local run = KEYS[1]
local now = tonumber(ARGV[1])
local f = redis.call('HMGET', run, 'tok', 'expus', 'rl', 'rlt')
if not f[1] or (f[2] and tonumber(f[2]) <= now) then return -1 end
if ARGV[4] ~= '' and f[1] ~= ARGV[4] then return -1 end
local rate, burst = tonumber(ARGV[2]), tonumber(ARGV[3])
if rate > 0 then
  local tokens, at, wait = take(f[3], f[4], now, rate, burst)
  if wait then return {-2, wait} end
  redis.call('HSET', run, 'rl', tokens, 'rlt', at)
end
return `+luaReadRun)
