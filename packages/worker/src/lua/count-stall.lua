--[[
  Counts a stall of a BullMQ job that a lapsed worker held, before the worker that claimed it
  hands it back (WorkerHeartbeat.handBack): what BullMQ's stalled-job check does to a job whose
  lock expired (moveStalledJobsToWait-9.lua), so that a step taken over from dead workers fails
  after `maxStalledCount` stalls whichever of the two found them. Past the limit the job keeps
  BullMQ's deferred failure (`defa`): the next worker to take it fails it with that reason
  instead of running it. A repeatable job (a schedule's tick) is never failed, as in BullMQ.

  KEYS[1] the job's hash
  KEYS[2] the job's lock
  ARGV[1] the lock token the lapsed worker held
  ARGV[2] maxStalledCount

  Returns the job's stall count now, or -1 when the lock is no longer that token (the job
  finished or was taken meanwhile: nothing is counted).
]]
if redis.call('GET', KEYS[2]) ~= ARGV[1] then
  return -1
end
local stalls = redis.call('HINCRBY', KEYS[1], 'stc', 1)
if stalls > tonumber(ARGV[2]) and not redis.call('HGET', KEYS[1], 'rjk') then
  redis.call('HSET', KEYS[1], 'defa', 'job stalled more than allowable limit')
end
return stalls
