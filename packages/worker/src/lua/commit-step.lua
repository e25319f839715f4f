--[[
  Commits the outcome of one step of a run, only if the run still stands at that step, so a step
  delivered twice never commits twice (DESIGN: Steps). When a fan-out child ends here and its
  parent's keys are given (a store of one partition), its outcome is recorded on the parent in
  the same script (no window between the two); on a store of several, the caller applies it next,
  in the parent's partition (child-ended.lua; RedisRunStore.commitApart).

  KEYS[1] run hash           KEYS[2] run error list      KEYS[3] run conflict list
  KEYS[4] run fan-out hash   KEYS[5] run outcome hash    KEYS[6] run reserved-messages hash
  KEYS[7] run step-history list  KEYS[8] run stream
  KEYS[9..16] (fan-out children only) the parent's eight keys, in the same order

  ARGV[1] options, JSON:
    at            expected step counter, ':' and the expected park count (see atStep)
    mode          next | retry | throttled | completed | failed
    target        the next target, JSON (absent: keep the stored one)
    now           epoch ms
    errors        error records to append, each JSON; for mode failed the last is the one that
                  failed the run
    lastAttempt   for mode failed: the 0-based try index of that record, when exec failed
    runError      the run's error JSON, for mode failed
    lastAction    for mode completed
    conflicts     merge conflicts to append, each JSON
    retryAt       for mode retry: when the next try is due (epoch ms)
    stepStartedAt for modes retry and throttled: when the step's first try began (epoch ms), kept
                  unless set
    throttledBy   for mode throttled: the budget key the step waits for (status throttled; the
                  attempt is unchanged: a throttled visit uses no try)
    maxRecords    history records kept
    retention     seconds a finished run is kept      maxErrors  error records kept
    channel       events channel     changes  changes channel     runId
    mailboxPrefix, waitersPrefix   key prefixes of mailboxes and their waiter sets
    outbox        the step's sends, { address, message JSON } pairs: delivered by modes next and
                  completed, dropped otherwise
    parent        (fan-out children) { id, step, index, errorRecord (JSON: a failed outcome's error, appended to
                  the parent's errors), failFast (bool), parentError (JSON), values (hashes the
                  outcome references, claimed for the parent), take (true: the worker runs the
                  next child itself, ChildEndReport.take) }
    values        hashes of the values stored apart the checkpoint and record reference, claimed
                  for the run (claimValues in run-lifecycle.lua)
    valuePrefix, valuesSuffix   where values and a run's claims live (redis-keys.ts)
    woken         true when the step parked before (its run's replay.parked): logWoken
    takenKey      (a worker that takes a run it wakes) its set of taken wakes: see takeWake; and,
                  with parent.take, of the child this child's end starts: see takeChild
    runPrefix     key prefix of run hashes (a taken child's record)
    starts        (modes next and completed) turns of idle agents the outbox reached, to start
                  here (CommitFields.starts; startDelivered in agent-lifecycle.lua)
    turnEnd       (an agent's turn whose run ends here, its key in this partition) the turn's
                  end, committed with the run's: endTurn's `o` (agent-lifecycle.lua) plus agent
                  (the address), state (completed: the new state JSON) and error (failed: the
                  error JSON); KEYS[9..14] are then the agent's keys
  ARGV[2] the new checkpoint ('' keeps the stored one)
  ARGV[3] the step's history record JSON (modes next and completed; '' none)
  ARGV[4] (fan-out children) the outcome JSON recorded on the parent, if the run ends here
          completed or failed ('' none)
  (The three JSON texts come apart from the options: no second encoding of them on either side.)
  ARGV[5..] hash, staging key pairs: the values of `values` that may not be stored yet (stagedValues)

  Messages the step reserved are consumed by modes next and completed, kept for a retry, and
  given back to their mailboxes when the run fails or is cancelled here.

  Returns { code, parentCode, first, count, wakes, taken, child, turn, takenRun, started }:
    code  1 committed
          0 stale: the run has ended (a cancel ends it at once) or moved past this step;
            nothing written
         -1 no such run
    parentCode, first, count: when a child ended here, recordChildEnd's answer (see
          run-lifecycle.lua); else -1, -1, 0
    wakes: wake ids of runs parked on mailboxes that got a message here
    taken: the wake id the worker took (takeWake), not among `wakes`; absent when none
    child: the fields of the child `first` this end started and the worker took (takeChild), as
          a flat list; absent when none
    turn: with turnEnd, when the run ended: endTurn's answer (the next turn it started, if any)
    takenRun: the taken wake's run, read for it (loadTaken in run-lifecycle.lua), or absent
    started: modes next and completed: the turns o.starts started (startDelivered in
          agent-lifecycle.lua)
  Emits: PUBLISH <channel> {type:'ended', runId, status} when the run (or its parent) ends.
  Logs (the run's event log, logEvent): woken (a step that parked), released (a throttled step
  that commits), retried (mode retry), throttled (mode throttled, unless throttled already).
]]
local o = cjson.decode(ARGV[1])
local checkpoint = ARGV[2]
local runKeys = { KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8] }
local runKey = KEYS[1]
local mode, now, runId, retention, channel = o.mode, o.now, o.runId, o.retention, o.channel
local wakes = {}
o.wakes = wakes -- handOff marks them (HANDED_OFF)

local function toParent(status, outcome)
  local p = o.parent
  if type(p) ~= 'table' then return { -1, -1, 0 } end
  local ok, errorRecord = '0', ''
  if status == 'completed' then ok = '1' end
  if status == 'failed' and type(p.errorRecord) == 'string' then errorRecord = p.errorRecord end
  local failFast = '0'
  if p.failFast then failFast = '1' end
  return recordChildEnd({ KEYS[9], KEYS[10], KEYS[11], KEYS[12], KEYS[13], KEYS[14], KEYS[15], KEYS[16] }, {
    parentId = p.id, parentStep = tostring(p.step), index = tostring(p.index), outcome = outcome, ok = ok,
    failFast = failFast, parentError = p.parentError, errorRecord = errorRecord, now = now,
    channel = channel, changes = o.changes, retention = retention, maxErrors = o.maxErrors,
    runs = o.runs, expiries = o.expiries, values = p.values, valuePrefix = o.valuePrefix,
    valuesSuffix = o.valuesSuffix, take = p.take, cascades = o.cascades,
  })
end

-- A worker that runs the next child itself (parent.take, ChildEndReport.take) takes the first
-- child this end started (`parent`: toParent's answer): its record is made here, and its first
-- step's task id (`<child id>-0`) joins the worker's taken set, from which a survivor starts it
-- should the worker die first. Returns the child's fields, or false.
local function takeChild(parent)
  local p = o.parent
  if type(p) ~= 'table' or not p.take or type(o.takenKey) ~= 'string' or parent[1] ~= 1 or parent[3] < 1 then
    return false
  end
  local fanOutKey = KEYS[12]
  local fanOut = redis.call('HMGET', fanOutKey, 'flow', 'fingerprint', 'childTarget', 'inputs')
  if not fanOut[3] or not fanOut[4] then return false end
  local c = { runPrefix = o.runPrefix, parentId = p.id, parentStep = tostring(p.step), now = now }
  local fields = makeChild(fanOut, redis.call('HGET', KEYS[9], 'priority'), c, parent[2],
    redis.call('HGET', fanOut[4], parent[2]))
  if fields then redis.call('SADD', o.takenKey, p.id .. '.' .. c.parentStep .. '.' .. parent[2] .. '-0') end
  return fields
end

-- An agent's turn ends with its run (o.turnEnd): endTurn's answer, or false.
local function endTheTurn()
  local t = o.turnEnd
  if type(t) ~= 'table' then return false end
  return endTurn(agentKeys(9), t.agent, runId, t, t.state or '', t.error or '', {})
end

local expectedStep, expectedParks = string.match(o.at, '^(%d+):(%d+)$')
local status = redis.call('HGET', runKey, 'status')
if not status then return { -1, -1, -1, 0, wakes } end
if isFinal(status) then return { 0, -1, -1, 0, wakes } end
if not atStep(runKey, expectedStep, expectedParks) then return { 0, -1, -1, 0, wakes } end

endStreamTry(runKey) -- the try ends here, whatever the mode: the next is no restart
if o.woken then logWoken(runKey, KEYS[6], now) end
if status == 'throttled' and mode ~= 'throttled' then
  logEvent(runKey, { at = tonumber(now), step = tonumber(expectedStep), kind = 'released',
    key = redis.call('HGET', runKey, 'throttledBy') or '' })
end
leaveWaiters(runKey, o, runId)
claimValues(runKey, runId, o.values, stagedValues(5), o)
if type(o.errors) == 'table' and #o.errors > 0 then
  for _, record in ipairs(o.errors) do redis.call('RPUSH', KEYS[2], record) end
  redis.call('LTRIM', KEYS[2], -tonumber(o.maxErrors), -1)
end
if type(o.conflicts) == 'table' then
  for _, conflict in ipairs(o.conflicts) do redis.call('RPUSH', KEYS[3], conflict) end
end
redis.call('HSET', runKey, 'updatedAt', now)
redis.call('HSETNX', runKey, 'startedAt', now)
redis.call('HDEL', runKey, 'refusal') -- a worker with the right code has taken the step

if mode == 'retry' then
  logEvent(runKey, { at = tonumber(now), step = tonumber(expectedStep), kind = 'retried',
    attempt = tonumber(redis.call('HGET', runKey, 'attempt') or '0'), retryAt = tonumber(o.retryAt or now) })
  if checkpoint ~= '' then redis.call('HSET', runKey, 'checkpoint', checkpoint) end
  if o.stepStartedAt then redis.call('HSETNX', runKey, 'stepStartedAt', o.stepStartedAt) end
  if o.retryAt then redis.call('HSET', runKey, 'retryAt', o.retryAt) end
  redis.call('HINCRBY', runKey, 'attempt', 1)
  redis.call('HSET', runKey, 'status', 'running')
  changed(runKey, runId, o)
  return { 1, -1, -1, 0, wakes }
end

if mode == 'throttled' then
  if status ~= 'throttled' then
    logEvent(runKey, { at = tonumber(now), step = tonumber(expectedStep), kind = 'throttled', key = o.throttledBy or '' })
  end
  if checkpoint ~= '' then redis.call('HSET', runKey, 'checkpoint', checkpoint) end
  if o.stepStartedAt then redis.call('HSETNX', runKey, 'stepStartedAt', o.stepStartedAt) end
  redis.call('HSET', runKey, 'status', 'throttled', 'throttledBy', o.throttledBy or '')
  changed(runKey, runId, o)
  return { 1, -1, -1, 0, wakes }
end

if mode == 'failed' then
  if type(o.runError) == 'string' then redis.call('HSET', runKey, 'error', o.runError) end
  -- A step that failed in exec: its last try counts among the step's tries.
  if type(o.lastAttempt) == 'number' then redis.call('HSET', runKey, 'attempt', o.lastAttempt + 1) end
  releaseReserved(KEYS[6], o, wakes, runKey)
  finish(runKeys, runId, 'failed', now, o)
  local parent = toParent('failed', ARGV[4])
  local taken = takeWake(o, wakes)
  return { 1, parent[1], parent[2], parent[3], wakes, taken, takeChild(parent), endTheTurn(), loadTaken(o, taken), false }
end

-- The step commits: what it received is consumed, what it sent leaves (idle agents it reached
-- start their turns: startDelivered, at the end).
consumeReserved(KEYS[6], o, runKey)
deliverOutbox(o, o.outbox, wakes, retention, runKey)
if ARGV[3] ~= '' then pushRecord(KEYS[7], ARGV[3], o.maxRecords) end
redis.call('HINCRBY', runKey, 'step', 1)
redis.call('HSET', runKey, 'attempt', 0)
redis.call('HDEL', runKey, 'replay', 'stepStartedAt', 'retryAt')
if checkpoint ~= '' then redis.call('HSET', runKey, 'checkpoint', checkpoint) end
if type(o.target) == 'string' then redis.call('HSET', runKey, 'target', o.target) end
-- A fan-in: the children's outcomes and the fan-out's counters stay readable (engine.children)
-- until the run expires; the snapshot they started from and their inputs go (merged now).
local inputs = redis.call('HGET', KEYS[4], 'inputs')
if inputs then redis.call('UNLINK', inputs) end
redis.call('HDEL', KEYS[4], 'snapshot', 'inputs')

if mode == 'completed' then
  if type(o.lastAction) == 'string' then redis.call('HSET', runKey, 'lastAction', o.lastAction) end
  finish(runKeys, runId, 'completed', now, o)
  local parent = toParent('completed', ARGV[4])
  local taken = takeWake(o, wakes)
  local turn = endTheTurn() -- before the sends' turns: the key's own next turn is taken first
  return { 1, parent[1], parent[2], parent[3], wakes, taken, takeChild(parent), turn, loadTaken(o, taken),
    startDelivered(o.starts, now, o) }
end

redis.call('HSET', runKey, 'status', 'running')
changed(runKey, runId, o)
local taken = takeWake(o, wakes)
return { 1, -1, -1, 0, wakes, taken, false, false, loadTaken(o, taken), startDelivered(o.starts, now, o) }
