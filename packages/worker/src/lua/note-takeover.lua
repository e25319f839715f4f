--[[
  Notes that a worker that stopped heartbeating held the run's current step (a survivor took its
  job over, worker-heartbeat.ts): the next load of the run by another worker (load-run.lua) logs
  `taken-over` from it, if the run still stands at the step it stands at now (`takenStep`: a step
  that committed meanwhile was no takeover). Nothing for a run that has ended or does not exist.

  KEYS[1] run hash
  ARGV[1] the dead worker's id

  Returns 1 noted, 0 not.
]]
local run = redis.call('HMGET', KEYS[1], 'status', 'step')
if not run[1] or isFinal(run[1]) then return 0 end
redis.call('HSET', KEYS[1], 'takenFrom', ARGV[1], 'takenStep', run[2] or '0')
return 1
