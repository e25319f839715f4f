--[[
  Lets a failed or cancelled run go on from its last committed checkpoint (engine.retry): the
  record becomes `waiting` again when it waited on a fan-out (outcomes of children that did not
  complete are dropped, their indices returned, so they can run again), `queued` when it never
  started, else `running`; its error and step start time go, its error history
  stays, its keys (and idempotency key) are kept again (no expiry).

  KEYS[1..8] run hash, error list, conflict list, fan-out hash, outcome hash, reserved hash,
             history list, stream

  ARGV[1] options, JSON: runId, now (epoch ms), changes (channel), expiries (the runs index's
          expiry set: the run no longer expires), valuePrefix, valuesSuffix (its values no longer
          expire either: holdValues in run-lifecycle.lua), cascades (RedisKeys.cascades: the run
          leaves it)

  Logs `operator-retry` (the run's event log, logEvent), which is kept again too.

  Returns { code, status, indices }:
    code 1 reopened: `status` the run's new status, `indices` the children to run again
         0 the run has not ended (`status` says how it stands)
         2 the run completed: nothing to retry
        -1 no such run
]]
local o = cjson.decode(ARGV[1])
local run = redis.call('HMGET', KEYS[1], 'status', 'step', 'startedAt')
local status = run[1]
if not status then return { -1, '', {} } end
if status == 'completed' then return { 2, status, {} } end
if status ~= 'failed' and status ~= 'cancelled' then return { 0, status, {} } end
local indices = {}
local fanOut = redis.call('HMGET', KEYS[4], 'step', 'total')
if fanOut[1] and fanOut[1] == run[2] then
  local removed = 0
  for index = 0, tonumber(fanOut[2]) - 1 do
    local outcome = redis.call('HGET', KEYS[5], index)
    if not outcome or cjson.decode(outcome).status ~= 'completed' then
      if outcome then
        redis.call('HDEL', KEYS[5], index)
        removed = removed + 1
      end
      indices[#indices + 1] = index
    end
  end
  -- Guarded: `-removed` of 0 is Lua's -0, which Redis reads as "-0" and refuses as an integer.
  if removed > 0 then redis.call('HINCRBY', KEYS[4], 'ended', -removed) end
  redis.call('HSET', KEYS[4], 'failed', 0)
  status = 'waiting'
elseif run[3] then
  status = 'running'
else
  status = 'queued'
end
logEvent(KEYS[1], { at = tonumber(o.now), step = tonumber(run[2]), kind = 'operator-retry', status = run[1] })
redis.call('PERSIST', KEYS[1] .. ':events')
redis.call('HSET', KEYS[1], 'status', status, 'attempt', 0, 'updatedAt', o.now)
redis.call('HDEL', KEYS[1], 'error', 'finishedAt', 'stepStartedAt', 'retryAt')
redis.call('HINCRBY', KEYS[1], 'retries', 1)
endStreamTry(KEYS[1]) -- a try cancelled in its step: the retried run's try is no restart
for i = 1, 8 do redis.call('PERSIST', KEYS[i]) end
local idempotencyKey = redis.call('HGET', KEYS[1], 'idempotencyKey')
if idempotencyKey then redis.call('PERSIST', idempotencyKey) end
local inputs = redis.call('HGET', KEYS[4], 'inputs')
if inputs then redis.call('PERSIST', inputs) end
redis.call('ZREM', o.expiries, o.runId)
redis.call('ZREM', o.cascades, o.runId) -- a cascade not finished is void: its children go on too
holdValues(KEYS[1], o.runId, o)
changed(KEYS[1], o.runId, o)
return { 1, status, indices }
