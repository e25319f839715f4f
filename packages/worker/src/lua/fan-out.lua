--[[
  Commits a step that fanned out: the parent waits (no worker holds it) until its last child has
  ended. The children's inputs were staged before (a chunk at a time: no script grows with the
  fan-out); they are kept now, and child run records are made as children start
  (create-children.lua), each with its checkpoint as a delta against the snapshot stored here once.

  KEYS[1] run hash           KEYS[2] run error list      KEYS[3] run conflict list
  KEYS[4] run fan-out hash   KEYS[5] run outcome hash    KEYS[6] run reserved-messages hash
  KEYS[7] run step-history list  KEYS[8] run stream
  KEYS[9] the fan-out's staged inputs (hash, written by the caller before this commit)

  ARGV[1] options, JSON:
    at         expected step counter, ':' and the expected park count (see atStep)
    now        epoch ms            runId        the parent's id
    total      number of children  startNow     children started now (the window, or all)
    window     most children in flight at a time     refill  children started together (see
               recordChildEnd in run-lifecycle.lua)
    kind       runs | items        channel      events channel      changes  changes channel
    maxRecords  history records kept
    retention  seconds a finished run is kept
    flow, fingerprint              the parent's flow and graph fingerprint (its children's too)
    childTarget  runs: the children's first target JSON
    mailboxPrefix, waitersPrefix   key prefixes of mailboxes and their waiter sets
    outbox     the step's sends, { address, message JSON } pairs
    values     hashes of the values stored apart the checkpoint, snapshot and record reference,
               claimed for the parent (claimValues in run-lifecycle.lua)
    valuePrefix, valuesSuffix   where values and a run's claims live (redis-keys.ts)
    woken      true when the step parked before (its run's replay.parked): logWoken
  ARGV[2] the parent's checkpoint (waiting)    ARGV[3] its target JSON
  ARGV[4] the fan-out request JSON (without per-child data)
  ARGV[5] the snapshot: the parent's shared when it fanned out
  ARGV[6] the step's history record JSON ('' none): apart from the options, so that a large one
          (the prep result of a large fan-out is in its frames) is not decoded here
  ARGV[7..] hash, staging key pairs: the values of `values` that may not be stored yet (stagedValues)

  Returns { code, wakes }:
    code 1 committed (the parent's step counter is now at + 1)
         0 stale (ended, or moved on); -1 no such run
    wakes: wake ids of runs parked on mailboxes that got a message here
  Emits: PUBLISH <channel> {type:'ended', ...} when the run is cancelled here.
]]
local o = cjson.decode(ARGV[1])
local runKey = KEYS[1]
local wakes = {}
o.wakes = wakes -- handOff marks them (HANDED_OFF)
local status = redis.call('HGET', runKey, 'status')
if not status then return { -1, wakes } end
if isFinal(status) then return { 0, wakes } end
local expectedStep, expectedParks = string.match(o.at, '^(%d+):(%d+)$')
if not atStep(runKey, expectedStep, expectedParks) then return { 0, wakes } end
local now, runId = o.now, o.runId
endStreamTry(runKey)
if o.woken then logWoken(runKey, KEYS[6], now) end
-- The step commits: what it received is consumed, what it sent leaves.
leaveWaiters(runKey, o, runId)
claimValues(runKey, runId, o.values, stagedValues(7), o)
consumeReserved(KEYS[6], o, runKey)
deliverOutbox(o, o.outbox, wakes, o.retention, runKey)
if ARGV[6] ~= '' then pushRecord(KEYS[7], ARGV[6], o.maxRecords) end
redis.call('HDEL', runKey, 'replay', 'stepStartedAt', 'retryAt')

local step = redis.call('HINCRBY', runKey, 'step', 1)
redis.call('HSET', runKey, 'status', 'waiting', 'attempt', 0, 'checkpoint', ARGV[2], 'target', ARGV[3], 'updatedAt', now)
redis.call('HSETNX', runKey, 'startedAt', now)
redis.call('DEL', KEYS[4], KEYS[5])
redis.call('PERSIST', KEYS[9])
redis.call('HSET', KEYS[4], 'request', ARGV[4], 'snapshot', ARGV[5], 'total', o.total, 'started', o.startNow,
  'ended', 0, 'failed', 0, 'step', step, 'kind', o.kind, 'inputs', KEYS[9], 'flow', o.flow,
  'fingerprint', o.fingerprint, 'at', now, 'window', o.window, 'refill', o.refill)
if type(o.childTarget) == 'string' then redis.call('HSET', KEYS[4], 'childTarget', o.childTarget) end
changed(runKey, runId, o)
return { 1, wakes }
