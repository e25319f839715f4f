--[[
  Commits a step that fanned out: the parent waits (no worker holds it) until its last child has
  ended. For walks, creates the child run records (`<parent id>.<step>.<index>`), which start
  from the snapshot stored here.

  KEYS[1] run hash           KEYS[2] run error list      KEYS[3] run conflict list
  KEYS[4] run fan-out hash   KEYS[5] run outcome hash    KEYS[6] run reserved-messages hash

  ARGV[1]  expected step counter, then ':' and the expected park count (see atStep)
  ARGV[2]  checkpoint JSON (the parent, waiting)
  ARGV[3]  target JSON
  ARGV[4]  now (epoch ms)
  ARGV[5]  fan-out request JSON
  ARGV[6]  snapshot JSON (the parent's shared when it fanned out)
  ARGV[7]  number of children
  ARGV[8]  children to start now (the concurrency limit, or all)
  ARGV[9]  kind: walks | items
  ARGV[10] events channel
  ARGV[11] parent run id
  ARGV[12] retention of a finished run (seconds)
  ARGV[13] flow name      ARGV[14] graph fingerprint
  ARGV[15] key prefix of run hashes (`<prefix>:run:`)
  ARGV[16] walks: the children's first target JSON
  ARGV[17] key prefix (mailboxes)
  ARGV[18] outbox size n, then n pairs (address, message JSON): the step's sends
  then, from ARGV[19 + 2n]: walks: each child's checkpoint JSON without `shared` (it starts from
             the snapshot); items: each item's JSON (stored on the fan-out hash as `i<index>`)

  Returns { code, wakes }:
    code 1 committed (the parent's step counter is now ARGV[1] + 1)
         0 stale; 2 cancelled instead; -1 no such run
    wakes: wake job ids of runs parked on mailboxes that got a message here
  Emits: PUBLISH <channel> {type:'ended', ...} when the run is cancelled here.
]]
local runKey = KEYS[1]
local wakes, prefix = {}, ARGV[17]
local status = redis.call('HGET', runKey, 'status')
if not status then return { -1, wakes } end
if isFinal(status) then return { 0, wakes } end
local expectedStep, expectedParks = string.match(ARGV[1], '^(%d+):(%d+)$')
if not atStep(runKey, expectedStep, expectedParks) then return { 0, wakes } end
local now, runId = ARGV[4], ARGV[11]
if redis.call('HGET', runKey, 'cancel') == '1' then
  releaseReserved(KEYS[6], prefix, wakes)
  finish({ KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6] }, runId, 'cancelled', now, ARGV[12], ARGV[10])
  return { 2, wakes }
end
-- The step commits: what it received is consumed, what it sent leaves.
leaveWaiters(runKey, prefix, runId)
redis.call('DEL', KEYS[6])
deliverOutbox(prefix, ARGV, 18, wakes, ARGV[12])
local first = 19 + 2 * (tonumber(ARGV[18]) or 0)
redis.call('HDEL', runKey, 'replay')

local step = redis.call('HINCRBY', runKey, 'step', 1)
redis.call('HSET', runKey, 'status', 'waiting', 'attempt', 0, 'checkpoint', ARGV[2], 'target', ARGV[3], 'updatedAt', now)
redis.call('HSETNX', runKey, 'startedAt', now)
redis.call('DEL', KEYS[4], KEYS[5])
local total = tonumber(ARGV[7])
redis.call('HSET', KEYS[4], 'request', ARGV[5], 'snapshot', ARGV[6], 'total', total, 'started', ARGV[8],
  'ended', 0, 'failed', 0, 'step', step, 'kind', ARGV[9])

if ARGV[9] == 'walks' then
  for index = 0, total - 1 do
    local childKey = ARGV[15] .. runId .. '.' .. step .. '.' .. index
    redis.call('HSET', childKey, 'flow', ARGV[13], 'fingerprint', ARGV[14], 'status', 'queued', 'step', 0,
      'attempt', 0, 'createdAt', now, 'updatedAt', now, 'parentId', runId, 'parentStep', step,
      'childIndex', index, 'target', ARGV[16], 'checkpoint', ARGV[first + index])
  end
else
  for index = 0, total - 1 do
    redis.call('HSET', KEYS[4], 'i' .. index, ARGV[first + index])
  end
end
return { 1, wakes }
