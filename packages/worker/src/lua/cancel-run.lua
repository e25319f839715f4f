--[[
  Cancels a run now: its status becomes `cancelled` and no later commit of it can land (every
  commit requires a run that has not ended). A step in flight is told to abort its `exec`; its
  result is then refused at its commit, so the run stops at that step boundary. Messages its
  step had reserved go back to their mailboxes.

  KEYS[1..8] run hash, error list, conflict list, fan-out hash, outcome hash, reserved hash,
             history list, stream

  ARGV[1] options, JSON: now (epoch ms), runId, retention (seconds), channel, changes,
          mailboxPrefix, waitersPrefix, cascades (the partition's runs whose children are being
          cancelled: the run joins it with code 2, see RedisKeys.cascades), by (who cancels, for
          the `cancelled` entry of the run's event log; absent: unknown)

  Returns { code, wakes }: code -1 no such run; 0 already ended; 1 cancelled now; 2 cancelled
          now while it was waiting on a fan-out (the caller cancels the children);
          wakes: wake ids of runs parked where messages went back
  Emits: PUBLISH <channel> {type:'cancel', runId, retries} (workers abort its exec; `retries`, the
         run's retry count, spares the steps of a later retry should the event come after it),
         then {type:'ended', runId, status:'cancelled'}.
]]
local o = cjson.decode(ARGV[1])
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return { -1, {} } end
if isFinal(status) then return { 0, {} } end
local wakes = {}
o.wakes = wakes -- handOff marks them (HANDED_OFF)
logEvent(KEYS[1], { at = tonumber(o.now), step = tonumber(redis.call('HGET', KEYS[1], 'step') or '0'),
  kind = 'cancelled', by = o.by })
leaveWaiters(KEYS[1], o, o.runId)
releaseReserved(KEYS[6], o, wakes, KEYS[1])
local retries = tonumber(redis.call('HGET', KEYS[1], 'retries') or '0')
redis.call('PUBLISH', o.channel, cjson.encode({ type = 'cancel', runId = o.runId, retries = retries }))
finish({ KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8] }, o.runId, 'cancelled', o.now, o)
-- Waiting on children: its fan-out is of its current step (one of an earlier step has fanned in).
local waitingOnChildren = status == 'waiting' and redis.call('HGET', KEYS[4], 'step') == redis.call('HGET', KEYS[1], 'step')
if waitingOnChildren then
  -- The caller cancels the children; should it die first, a worker's heartbeat does (cascades).
  redis.call('ZADD', o.cascades, 'NX', o.now, o.runId)
  return { 2, wakes }
end
return { 1, wakes }
