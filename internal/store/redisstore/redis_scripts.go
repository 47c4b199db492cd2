package redisstore

import (
	"crypto/sha1"
	"encoding/hex"
)

// luaScript is a script's text and its SHA-1, the EVALSHA name.
type luaScript struct{ src, sha string }

// Each script begins with a shebang that declares its flags (Redis 7.0
// and later), which Redis checks before the script runs. Under maxmemory
// Redis refuses, with an OOM error, a script declared without allow-oom
// or no-writes while it is over the limit, whatever commands the script
// would run: so a script that adds data fails whole when Redis is full
// (the caller sees ErrStoreUnavailable), and cannot slip in on a first
// command Redis allows anyway (a DEL, a ZREMRANGEBYSCORE) as a script
// without a shebang does.
const (
	// addsData: refused when Redis is full. The default.
	addsData = "#!lua\n"
	// readsOnly: the script writes nothing (Redis refuses a write in it)
	// and runs when Redis is full.
	readsOnly = "#!lua flags=no-writes\n"
	// freesData: the script only removes data, so runs when Redis is full:
	// a run can be deleted to make room.
	freesData = "#!lua flags=allow-oom\n"
)

// newScript returns a script that adds data.
func newScript(src string) *luaScript { return flagged(addsData, src) }

func flagged(shebang, src string) *luaScript {
	src = shebang + src
	sum := sha1.Sum([]byte(src))
	return &luaScript{src: src, sha: hex.EncodeToString(sum[:])}
}

// The Lua scripts of the Redis store. Each runs atomically on the server
// and touches the keys of one hash slot only: either the keys of one run
// (all tagged {runId}) or the two index keys (tagged {idx}), so the store
// works on Redis Cluster.
//
// Expiry is checked against the store's clock, passed in as now_us
// (microseconds since the epoch; exact in Lua's doubles): a run whose expus
// field is <= now_us is gone, whatever its keys' TTLs say. The TTLs
// (PEXPIREAT at the pxat field, in milliseconds, rounded up) only give the
// memory back.
//
// Replies: -1 means "no live run"; other statuses are listed per script.

// luaLive is prepended to every run script: live(run, now) reports whether
// the run hash exists and has not expired at now; expireAt(run, key) gives
// key the run's TTL.
const luaLive = `
local function live(run, now)
  local f = redis.call('HMGET', run, 'tok', 'expus')
  if not f[1] then return false end
  if f[2] and tonumber(f[2]) <= tonumber(now) then return false end
  return true
end
local function expireAt(run, key)
  local at = redis.call('HGET', run, 'pxat')
  if at then redis.call('PEXPIREAT', key, at) end
end
`

// luaMint is prepended to the scripts that mint handles (scriptMint,
// scriptFinish). pick(handles, first, k) reads the referents from
// ARGV[first] on (each: 'i' and its identity digest, its record, its
// bytes, k candidate token suffixes) and gives each its held token or its
// first free candidate, reading the handle table in one HMGET of the
// identities (and one of the first candidates, when some are new): it
// returns {0, token...}, the new identities ({'i'..digest, record,
// token}) and their bytes, or nil when a referent ran out of candidates.
// mint writes the new identities (one HSET and one RPUSH per 250), or
// returns 2 with nothing written when they would pass max handles or max
// bytes (0: no cap); hb is the held bytes, pxat the run's expiry (nil:
// none).
const luaMint = `
local function hmget(key, fields)
  local out = {}
  for i = 1, #fields, 1000 do
    local got = redis.call('HMGET', key, unpack(fields, i, math.min(i + 999, #fields)))
    for j = 1, #got do out[i + j - 1] = got[j] end
  end
  return out
end
local function pick(handles, first, k)
  local stride = 3 + k
  local keys = {}
  for base = first, #ARGV, stride do keys[#keys + 1] = ARGV[base] end
  local held = hmget(handles, keys)
  local out, fresh, taken, new = {0}, {}, {}, {}
  local firsts
  local bytes = 0
  for i = 1, #keys do
    local tok = held[i]
    if not tok then
      if not firsts then
        local names, at = {}, {}
        for j = i, #keys do
          if not held[j] then
            names[#names + 1] = 't' .. ARGV[first + (j - 1) * stride + 3]
            at[j] = #names
          end
        end
        local got = hmget(handles, names)
        firsts = {}
        for j, n in pairs(at) do firsts[j] = got[n] end
      end
      local base, key = first + (i - 1) * stride, keys[i]
      tok = fresh[key]
      if not tok then
        for c = base + 3, base + 2 + k do
          local cand = ARGV[c]
          if not taken[cand] then
            local busy
            if c == base + 3 then
              busy = firsts[i]
            else
              busy = redis.call('HEXISTS', handles, 't' .. cand) == 1
            end
            if not busy then
              tok = cand
              break
            end
          end
        end
        if not tok then return nil end
        fresh[key], taken[tok] = tok, true
        new[#new + 1] = {key, ARGV[base + 1], tok}
        bytes = bytes + tonumber(ARGV[base + 2])
      end
    end
    out[#out + 1] = tok
  end
  return out, new, bytes
end
local function mint(run, handles, order, new, bytes, max, maxBytes, hb, pxat)
  if #new == 0 then return nil end
  if max > 0 and redis.call('LLEN', order) + #new > max then return 2 end
  if maxBytes > 0 and tonumber(hb or '0') + bytes > maxBytes then return 2 end
  for i = 1, #new, 250 do
    local fields, toks = {}, {}
    for j = i, math.min(i + 249, #new) do
      local r = new[j]
      fields[#fields + 1] = r[1]
      fields[#fields + 1] = r[3]
      fields[#fields + 1] = 't' .. r[3]
      fields[#fields + 1] = r[2]
      toks[#toks + 1] = r[3]
    end
    redis.call('HSET', handles, unpack(fields))
    redis.call('RPUSH', order, unpack(toks))
  end
  redis.call('HINCRBY', run, 'hb', string.format('%d', bytes))
  if pxat then
    redis.call('PEXPIREAT', handles, pxat)
    redis.call('PEXPIREAT', order, pxat)
  end
  return nil
end
`

// mintScript returns a run script that mints handles (luaMint).
func mintScript(body string) *luaScript { return runScript(luaMint + body) }

// runScript returns a run script that adds data; readScript one that
// writes nothing.
func runScript(body string) *luaScript  { return newScript(luaLive + body) }
func readScript(body string) *luaScript { return flagged(readsOnly, luaLive+body) }

// scriptReserve takes the run id and the token hash in the index.
// KEYS: runs (zset id -> expus, +inf for never), tok (string -> id),
// created (zset id -> created_us, the order of RunsPage).
// ARGV: id, now_us, score, maxRuns, pxat ("" for none), created_us.
// Expired ids leave both zsets first. Returns 0 (reserved), 1 (a live run
// has the id or the token hash), 2 (maxRuns live runs).
var scriptReserve = newScript(`
local runs, tok, created = KEYS[1], KEYS[2], KEYS[3]
local id, now, score, max, pxat = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5]
local gone = redis.call('ZRANGEBYSCORE', runs, '-inf', now)
for i = 1, #gone, 1000 do
  redis.call('ZREM', created, unpack(gone, i, math.min(i + 999, #gone)))
end
redis.call('ZREMRANGEBYSCORE', runs, '-inf', now)
if redis.call('ZSCORE', runs, id) then return 1 end
local owner = redis.call('GET', tok)
if owner and redis.call('ZSCORE', runs, owner) then return 1 end
if max > 0 and redis.call('ZCARD', runs) >= max then return 2 end
redis.call('ZADD', runs, score, id)
redis.call('ZADD', created, ARGV[6], id)
if pxat == '' then
  redis.call('SET', tok, id)
else
  redis.call('SET', tok, id, 'PXAT', pxat)
end
return 0
`)

// scriptUnindex drops a run from the index.
// KEYS: runs, tok, created. ARGV: id. The token key goes only if it names
// the id.
var scriptUnindex = flagged(freesData, `
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return 0
`)

// scriptCreate writes a reserved run, dropping whatever an expired run of
// the same id left.
// KEYS: run, calls, handles, order, result, flight, chain.
// ARGV: pxat ("" for none), then field, value pairs of the run hash.
var scriptCreate = newScript(`
redis.call('DEL', unpack(KEYS))
local f = {}
for i = 2, #ARGV do f[#f + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(f))
if ARGV[1] ~= '' then redis.call('PEXPIREAT', KEYS[1], ARGV[1]) end
return 0
`)

// luaReadRun ends the scripts that read a run (scriptGet, scriptBegin):
// the run hash's fields runFields (nil where unset), #calls, #handles,
// hasResult. KEYS: run, calls, order, result.
const luaReadRun = `{redis.call('HMGET', KEYS[1], 'tok', 'created', 'expires', 'ceil', 'tools', 'mc', 'seq', 'hb'),
  redis.call('LLEN', KEYS[2]), redis.call('LLEN', KEYS[3]), redis.call('EXISTS', KEYS[4])}
`

// runFields are the run hash's fields luaReadRun reads, in its order.
var runFields = [...]string{"tok", "created", "expires", "ceil", "tools", "mc", "seq", "hb"}

// scriptGet reads a run with its counters.
// KEYS: run, calls, order, result. ARGV: now_us.
// Returns luaReadRun's reply.
var scriptGet = readScript(`
if not live(KEYS[1], ARGV[1]) then return -1 end
return ` + luaReadRun)

// scriptDelete removes a live run's keys, publishes the deletion, and
// returns the run's token hash field. KEYS: run, calls, handles, order,
// result, flight, chain. ARGV: now_us, channel, message (see Redis.WatchDeletes). The
// publish is a pcall: a refused PUBLISH (an ACL without the channel) does
// not fail the delete, whose keys are gone by then.
var scriptDelete = flagged(freesData, luaLive+`
if not live(KEYS[1], ARGV[1]) then return -1 end
local tok = redis.call('HGET', KEYS[1], 'tok')
redis.call('DEL', unpack(KEYS))
redis.pcall('PUBLISH', ARGV[2], ARGV[3])
return tok
`)

// scriptNext increments the output sequence. KEYS: run. ARGV: now_us.
var scriptNext = runScript(`
if not live(KEYS[1], ARGV[1]) then return -1 end
return redis.call('HINCRBY', KEYS[1], 'seq', 1)
`)

// scriptLabel reads the model-context label ("" when empty).
// KEYS: run. ARGV: now_us.
var scriptLabel = readScript(`
if not live(KEYS[1], ARGV[1]) then return -1 end
return redis.call('HGET', KEYS[1], 'mc') or ''
`)

// scriptSwapLabel replaces the model-context label if it is still old
// (compare and set). KEYS: run. ARGV: now_us, old, new ("" = empty).
// Returns 0 (set), or the current label when it is no longer old.
var scriptSwapLabel = runScript(`
if not live(KEYS[1], ARGV[1]) then return -1 end
local cur = redis.call('HGET', KEYS[1], 'mc') or ''
if cur ~= ARGV[2] then return {cur} end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], 'mc')
else
  redis.call('HSET', KEYS[1], 'mc', ARGV[3])
end
return 0
`)

// scriptAppendCall appends a call record. KEYS: run, calls. ARGV: now_us, record.
var scriptAppendCall = runScript(`
if not live(KEYS[1], ARGV[1]) then return -1 end
if redis.call('RPUSH', KEYS[2], ARGV[2]) == 1 then expireAt(KEYS[1], KEYS[2]) end
return 0
`)

// scriptCalls reads one page of the call log, so that no script works
// through a whole long log at once. KEYS: run, calls. ARGV: now_us, start,
// stop (LRANGE indexes, inclusive). Returns {tok, #calls, records}: the
// token hash tells a page of the same run from one of a run recreated
// under the id between pages.
var scriptCalls = readScript(`
if not live(KEYS[1], ARGV[1]) then return -1 end
return {redis.call('HGET', KEYS[1], 'tok'), redis.call('LLEN', KEYS[2]),
  redis.call('LRANGE', KEYS[2], ARGV[2], ARGV[3])}
`)

// scriptMint registers referents.
// KEYS: run, handles (hash: 'i'..identity digest -> token suffix,
// 't'..suffix -> referent record), order (list of suffixes, minting order).
// ARGV: now_us, max handles, max bytes, k, then per referent: 'i' and its
// identity digest, its record, its bytes (ReferentBytes), and k candidate
// suffixes (MintToken attempts 0..k-1). The run hash's hb field is the
// table's held bytes. A held identity keeps its suffix; a new one takes
// its first candidate that is neither held nor taken earlier in the
// batch. Returns {0, the suffixes one after another}, 2 (the new
// identities would pass max
// handles or max bytes; nothing written) or 3 (some referent ran out of
// candidates; nothing written, call again with more). Byte counts stay
// far below 2^53, so exact in Lua.
var scriptMint = mintScript(`
local run, handles, order = KEYS[1], KEYS[2], KEYS[3]
local f = redis.call('HMGET', run, 'tok', 'expus', 'hb', 'pxat')
if not f[1] or (f[2] and tonumber(f[2]) <= tonumber(ARGV[1])) then return -1 end
local max, maxBytes, k = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local out, new, bytes = pick(handles, 5, k)
if not out then return 3 end
local refused = mint(run, handles, order, new, bytes, max, maxBytes, f[3], f[4])
if refused then return refused end
return {0, table.concat(out, '', 2)}
`)

// scriptHandles reads one page of the handle table in minting order,
// so that no script returns a whole large table (Store.Handles reads
// page after page). KEYS: run, handles, order. ARGV: now_us, start (the
// index of the page's first referent), n (at most n referents), max
// bytes (no referent is added once the page's records hold max bytes; a
// page holds at least one). Returns {tok, #table, suffixes, records}:
// the token hash tells a page of the same run from one of a run
// recreated under the id between pages.
var scriptHandles = readScript(`
if not live(KEYS[1], ARGV[1]) then return -1 end
local start, n, maxBytes = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local toks = redis.call('LRANGE', KEYS[3], start, start + n - 1)
local out, recs, bytes = {}, {}, 0
for i, t in ipairs(toks) do
  if i > 1 and bytes >= maxBytes then break end
  local rec = redis.call('HGET', KEYS[2], 't' .. t)
  if not rec then return redis.error_reply('handle table: no record for a listed token') end
  out[i], recs[i] = t, rec
  bytes = bytes + #rec
end
return {redis.call('HGET', KEYS[1], 'tok'), redis.call('LLEN', KEYS[3]), out, recs}
`)

// scriptHolds reports which of some tokens the run holds, reading only
// their entries (HEXISTS), never a record. KEYS: run, handles, result.
// ARGV: now_us, then the token suffixes ("" for a token no store
// holds). Returns {hasResult, held...}: 1 or 0 each.
var scriptHolds = readScript(`
if not live(KEYS[1], ARGV[1]) then return -1 end
local out = {redis.call('EXISTS', KEYS[3])}
for i = 2, #ARGV do
  if ARGV[i] == '' then
    out[i] = 0
  else
    out[i] = redis.call('HEXISTS', KEYS[2], 't' .. ARGV[i])
  end
end
return out
`)

// scriptHandle reads one referent. KEYS: run, handles. ARGV: now_us,
// suffix ("" for a token no store holds). Returns 0 (not held) or {record}.
var scriptHandle = readScript(`
if not live(KEYS[1], ARGV[1]) then return -1 end
if ARGV[2] == '' then return 0 end
local rec = redis.call('HGET', KEYS[2], 't' .. ARGV[2])
if not rec then return 0 end
return {rec}
`)

// scriptPutResult stores the result once and, with chain arguments,
// extends the run's chain (luaChainCheck). KEYS: run, result, chain.
// ARGV: now_us, record, then luaChainCheck's four. Returns 0, 1 when a
// result is stored, or luaChainCheck's {5, ...}.
var scriptPutResult = runScript(luaChain + `
if not live(KEYS[1], ARGV[1]) then return -1 end
if redis.call('EXISTS', KEYS[2]) == 1 then return 1 end
local moved = chainMoved(KEYS[1], 3, '', '')
if moved then return moved end
redis.call('SET', KEYS[2], ARGV[2])
expireAt(KEYS[1], KEYS[2])
chainExtend(KEYS[1], KEYS[3], 3)
return 0
`)

// scriptResult reads the result. KEYS: run, result. ARGV: now_us.
// Returns 0 (none written) or {record}.
var scriptResult = readScript(`
if not live(KEYS[1], ARGV[1]) then return -1 end
local rec = redis.call('GET', KEYS[2])
if not rec then return 0 end
return {rec}
`)
