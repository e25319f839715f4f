--[[
  Asks a run to stop at its next step boundary. A run that is waiting on children holds no step,
  so it is cancelled at once.

  KEYS[1] run hash   KEYS[2] run error list   KEYS[3] run conflict list
  KEYS[4] run fan-out hash   KEYS[5] run outcome hash
  ARGV[1] now (epoch ms)   ARGV[2] events channel   ARGV[3] run id
  ARGV[4] retention of a finished run (seconds)

  Returns: -1 no such run; 0 already ended; 1 cancel requested (a step is queued or running);
           2 cancelled now (it was waiting: cancel its children)
  Emits: PUBLISH <channel> {type:'cancel', runId} for workers running its step, or
         {type:'ended', ...} when it is cancelled here.
]]
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return -1 end
if isFinal(status) then return 0 end
redis.call('HSET', KEYS[1], 'cancel', '1', 'updatedAt', ARGV[1])
if status == 'waiting' then
  finish({ KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5] }, ARGV[3], 'cancelled', ARGV[1], ARGV[4], ARGV[2])
  return 2
end
redis.call('PUBLISH', ARGV[2], cjson.encode({ type = 'cancel', runId = ARGV[3] }))
return 1
