--[[
  Reads a run's record for the step about to run, and marks a queued run as running (its first
  step starts now, before any commit) if this worker can run it, so `get` tells a run a worker
  has taken from one still waiting for a worker. One round trip for both.

  For a wake (ARGV[2], the park count it ends) of a run still parked at that park count, the
  messages its current step holds reserved come back too, the parked receive's reserved now
  when its mailbox has one (as reserve-message.lua would when the step runs again): a woken step
  needs no round trip for its receives.

  KEYS[1] run hash   KEYS[2] run reserved-messages hash
  ARGV[1] now (epoch ms)
  ARGV[2] the park count of the wake being run, or '' (not a wake)
  ARGV[3] JSON { mailboxPrefix, partition, partitions, worker, stalled }: mailboxes of another
          partition are not read here (reserve-message.lua, hold-message.lua); worker: who loads
          it; stalled: { key, step, from } when the task came back from a worker that lost it
          without a word (BullMQ's stalled-job check; RunStore's StalledTask)
  A run whose step a dead worker held (`takenFrom`, note-takeover.lua) logs `taken-over` from that
  worker by `worker` (the run's event log, logEvent) and forgets it. A run not ended loaded for a
  stalled task logs `taken-over` by `worker` from `stalled.from`, else, when the run stands past
  the task's step, from the worker of its newest step record (it ran those steps in that task);
  once per `stalled.key` (kept as `stalledKey`), never from `worker` itself, and one entry with
  the above. Only such a load reads or writes more.
  ARGV[4..] pairs of flow name and graph fingerprint this worker runs
  Returns: { the hash as a flat list of fields and values (empty when there is no such run),
             the reserved hash as a flat list (`a<n>` address, `m<n>` message of receive n) }
]]
local run = redis.call('HMGET', KEYS[1], 'status', 'flow', 'fingerprint', 'createdAt', 'parkCount', 'replay', 'takenFrom')
local m = cjson.decode(ARGV[3])
local takenOver = false
if run[7] and type(m.worker) == 'string' and m.worker ~= run[7] then
  local at = redis.call('HMGET', KEYS[1], 'step', 'takenStep')
  if not isFinal(run[1]) and at[1] == at[2] then
    logEvent(KEYS[1], { at = tonumber(ARGV[1]), step = tonumber(at[1] or '0'), kind = 'taken-over', from = run[7],
      by = m.worker })
    takenOver = true
  end
  redis.call('HDEL', KEYS[1], 'takenFrom', 'takenStep')
end
local stalled = m.stalled
if type(stalled) == 'table' and type(m.worker) == 'string' and run[1] and not isFinal(run[1]) then
  local at = redis.call('HMGET', KEYS[1], 'step', 'stalledKey')
  if at[2] ~= stalled.key then
    redis.call('HSET', KEYS[1], 'stalledKey', stalled.key)
    local step = tonumber(at[1] or '0')
    local from = stalled.from
    if type(from) ~= 'string' and step > stalled.step then
      local last = redis.call('LINDEX', KEYS[1] .. ':history', -1)
      if last then from = cjson.decode(last).w end
    end
    if not takenOver and type(from) == 'string' and from ~= m.worker then
      logEvent(KEYS[1], { at = tonumber(ARGV[1]), step = step, kind = 'taken-over', from = from, by = m.worker })
    end
  end
end
if run[1] == 'queued' then
  -- Never before its creation, which another process stamped on its own reading of the clock.
  local now = string.format('%d', math.max(tonumber(ARGV[1]), tonumber(run[4]) or 0))
  for i = 4, #ARGV, 2 do
    if ARGV[i] == run[2] and ARGV[i + 1] == run[3] then
      redis.call('HSET', KEYS[1], 'status', 'running', 'startedAt', now, 'updatedAt', now)
      break
    end
  end
end
return { redis.call('HGETALL', KEYS[1]), reserveWoken(KEYS[2], run[1], run[5], run[6], ARGV[2], m) }
