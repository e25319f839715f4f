--[[
  The registry of live workers, on the Redis server's clock (`TIME`), so a worker whose own clock
  is off is neither dropped early nor kept late.

  KEYS[1] workers hash (id -> worker JSON)   KEYS[2] last-seen sorted set (id -> epoch ms)
  ARGV[1] operation: join | beat | live | claim | remove
  ARGV[2] join, beat: the worker JSON (with its id); live, claim: the lapse in ms; remove: the id

  Returns: join, remove: the server's time (epoch ms)
           beat: the server's time, or 'fenced' when the worker is not in the registry: another
           worker claimed it (its heartbeat lapsed while it lived: paused, starved) and took its
           steps; it is not recorded again (it must stop its steps and join under a new id)
           live: the workers seen within the lapse, as JSON with lastSeenAt
           claim: the workers not seen within the lapse, as JSON with lastSeenAt and silentMs
           (how long since, on this clock), now taken out of the registry (exactly one caller
           gets each)
]]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local op = ARGV[1]
if op == 'join' or op == 'beat' then
  local worker = cjson.decode(ARGV[2])
  if op == 'beat' and redis.call('HEXISTS', KEYS[1], worker.id) == 0 then return 'fenced' end
  redis.call('HSET', KEYS[1], worker.id, ARGV[2])
  redis.call('ZADD', KEYS[2], now, worker.id)
  return now
end
if op == 'remove' then
  redis.call('HDEL', KEYS[1], ARGV[2])
  redis.call('ZREM', KEYS[2], ARGV[2])
  return now
end
local since = now - tonumber(ARGV[2])
local ids
if op == 'live' then
  ids = redis.call('ZRANGEBYSCORE', KEYS[2], since, '+inf', 'WITHSCORES')
else
  ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. since, 'WITHSCORES')
end
local found = {}
for i = 1, #ids, 2 do
  local json = redis.call('HGET', KEYS[1], ids[i])
  if json then
    local worker = cjson.decode(json)
    worker.lastSeenAt = tonumber(ids[i + 1])
    -- Its startedAt is the worker's estimate of this clock, which may be a millisecond ahead of
    -- its join here: no worker is seen before it started.
    if type(worker.startedAt) == 'number' and worker.startedAt > worker.lastSeenAt then
      worker.startedAt = worker.lastSeenAt
    end
    if op == 'claim' then worker.silentMs = now - worker.lastSeenAt end
    found[#found + 1] = cjson.encode(worker)
  end
  if op == 'claim' then
    redis.call('HDEL', KEYS[1], ids[i])
    redis.call('ZREM', KEYS[2], ids[i])
  end
end
return found
