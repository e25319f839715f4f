--[[
  Removes a run that could not be started (its first step could not be enqueued): its record,
  its place in the runs index, and its claims on values stored apart (a value no other run
  claims goes now).

  KEYS[1] run hash   KEYS[2] runs index
  ARGV[1] options, JSON: runId, now (epoch ms), valuePrefix, valuesSuffix (redis-keys.ts)

  Returns 1.
]]
local o = cjson.decode(ARGV[1])
releaseValues(KEYS[1], o.runId, tonumber(o.now) - 1, o.now, o)
redis.call('DEL', KEYS[1], KEYS[1] .. ':events')
redis.call('ZREM', KEYS[2], o.runId)
return 1
