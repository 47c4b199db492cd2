package redisstore

// scriptBegin starts an output: it takes a call from the run's rate bucket
// (store.Rate.Take in Lua, on the hash fields rl, the calls held, and rlt,
// when in microseconds) and the next output number, and reads the run as
// scriptGet does. KEYS: run, calls, order, result. ARGV: now_us, rate (calls
// a second; <= 0 no limit), burst. Returns scriptGet's reply, or
// {-2, microseconds until the bucket holds a call} with nothing written.
var scriptBegin = runScript(`
local run = KEYS[1]
local now = tonumber(ARGV[1])
if not live(run, now) then return -1 end
local rate, burst = tonumber(ARGV[2]), tonumber(ARGV[3])
if rate > 0 then
  local b = redis.call('HMGET', run, 'rl', 'rlt')
  local tokens, at = burst, now
  if b[1] and b[2] then
    tokens, at = tonumber(b[1]), tonumber(b[2])
    if now > at then
      tokens = math.min(burst, tokens + (now - at) * rate / 1e6)
      at = now
    end
  end
  if tokens < 1 then return {-2, math.ceil((1 - tokens) * 1e6 / rate)} end
  redis.call('HSET', run, 'rl', string.format('%.17g', tokens - 1), 'rlt', string.format('%d', at))
end
redis.call('HINCRBY', run, 'seq', 1)
return {redis.call('HGETALL', run), redis.call('LLEN', KEYS[2]),
  redis.call('LLEN', KEYS[3]), redis.call('EXISTS', KEYS[4])}
`)
