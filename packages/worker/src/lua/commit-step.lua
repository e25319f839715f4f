--[[
  Commits the outcome of one step of a run, only if the run still stands at that step, so a step
  delivered twice never commits twice (DESIGN: Steps). When a fan-out child ends here, its
  outcome is recorded on the parent in the same script (no window between the two).

  KEYS[1] run hash           KEYS[2] run error list      KEYS[3] run conflict list
  KEYS[4] run fan-out hash   KEYS[5] run outcome hash    KEYS[6] run reserved-messages hash
  KEYS[7..12] (fan-out children only) the parent's six keys, in the same order

  ARGV[1]  expected step counter, then ':' and the expected park count (see atStep)
  ARGV[2]  mode: next | retry | completed | failed
  ARGV[3]  checkpoint JSON ('' keeps the stored one)
  ARGV[4]  target JSON ('' keeps the stored one)
  ARGV[5]  now (epoch ms)
  ARGV[6]  error records to append to the error list: a JSON array ('' none); for mode failed
           the last one is the error that failed the run
  ARGV[7]  run error JSON, for mode failed ('' none)
  ARGV[8]  last action ('' none)
  ARGV[9]  retention of a finished run (seconds)
  ARGV[10] events channel
  ARGV[11] run id
  ARGV[12] most error records kept
  ARGV[13] merge conflicts JSON array to append ('' none)
  ARGV[14] parent run id ('' when the run is not a fan-out child); then, for children:
  ARGV[15] parent step   ARGV[16] child index
  ARGV[17] the child's outcome JSON if it ends here completed or failed
  ARGV[18] 1 for fail-fast   ARGV[19] the parent's run error JSON if it fails fast
  ARGV[20] key prefix (mailboxes)
  ARGV[21] outbox size n, then n pairs (address, message JSON): the step's sends, delivered
           by modes next and completed; dropped otherwise

  Messages the step reserved are consumed by modes next and completed, kept for a retry, and
  given back to their mailboxes when the run fails or is cancelled here.

  Returns { code, parentCode, next, wakes }:
    code  1 committed
          0 stale: the run has ended or moved past this step; nothing written
          2 a cancel was requested: the run is now cancelled instead
         -1 no such run
    parentCode, next: when a child ended here, recordChildEnd's answer (see run-lifecycle.lua);
          else -1, -1
    wakes: wake job ids of runs parked on mailboxes that got a message here
  Emits: PUBLISH <channel> {type:'ended', runId, status} when the run (or its parent) ends.
]]
local runKeys = { KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6] }
local runKey = KEYS[1]
local mode, now, runId, retention, channel = ARGV[2], ARGV[5], ARGV[11], ARGV[9], ARGV[10]
local prefix, wakes = ARGV[20], {}

local function toParent(status, outcome)
  if ARGV[14] == '' then return { -1, -1 } end
  local ok, errorRecord = '0', ''
  if status == 'completed' then ok = '1' end
  if status == 'failed' and ARGV[6] ~= '' then
    local records = cjson.decode(ARGV[6])
    errorRecord = cjson.encode(records[#records])
  end
  return recordChildEnd({ KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11], KEYS[12] }, {
    parentId = ARGV[14], parentStep = ARGV[15], index = ARGV[16], outcome = outcome, ok = ok,
    failFast = ARGV[18], parentError = ARGV[19], errorRecord = errorRecord, now = now,
    channel = channel, retention = retention,
  })
end

local expectedStep, expectedParks = string.match(ARGV[1], '^(%d+):(%d+)$')
local status = redis.call('HGET', runKey, 'status')
if not status then return { -1, -1, -1, wakes } end
if isFinal(status) then return { 0, -1, -1, wakes } end
if not atStep(runKey, expectedStep, expectedParks) then return { 0, -1, -1, wakes } end

leaveWaiters(runKey, prefix, runId)
if redis.call('HGET', runKey, 'cancel') == '1' then
  releaseReserved(KEYS[6], prefix, wakes)
  finish(runKeys, runId, 'cancelled', now, retention, channel)
  local parent = toParent('cancelled', cjson.encode({ status = 'cancelled' }))
  return { 2, parent[1], parent[2], wakes }
end

local errorRecords = {}
if ARGV[6] ~= '' then
  errorRecords = cjson.decode(ARGV[6])
  for _, record in ipairs(errorRecords) do redis.call('RPUSH', KEYS[2], cjson.encode(record)) end
  redis.call('LTRIM', KEYS[2], -tonumber(ARGV[12]), -1)
end
if ARGV[13] ~= '' then
  for _, conflict in ipairs(cjson.decode(ARGV[13])) do
    redis.call('RPUSH', KEYS[3], cjson.encode(conflict))
  end
end
redis.call('HSET', runKey, 'updatedAt', now)
redis.call('HSETNX', runKey, 'startedAt', now)
redis.call('HDEL', runKey, 'refusal') -- a worker with the right code has taken the step

if mode == 'retry' then
  if ARGV[3] ~= '' then redis.call('HSET', runKey, 'checkpoint', ARGV[3]) end
  redis.call('HINCRBY', runKey, 'attempt', 1)
  redis.call('HSET', runKey, 'status', 'running')
  return { 1, -1, -1, wakes }
end

if mode == 'failed' then
  if ARGV[7] ~= '' then redis.call('HSET', runKey, 'error', ARGV[7]) end
  local last = errorRecords[#errorRecords]
  -- A step that failed in exec: its last try counts among the step's tries.
  if last and type(last.attempt) == 'number' then redis.call('HSET', runKey, 'attempt', last.attempt + 1) end
  releaseReserved(KEYS[6], prefix, wakes)
  finish(runKeys, runId, 'failed', now, retention, channel)
  local parent = toParent('failed', ARGV[17])
  return { 1, parent[1], parent[2], wakes }
end

-- The step commits: what it received is consumed, what it sent leaves.
redis.call('DEL', KEYS[6])
deliverOutbox(prefix, ARGV, 21, wakes, retention)
redis.call('HINCRBY', runKey, 'step', 1)
redis.call('HSET', runKey, 'attempt', 0)
redis.call('HDEL', runKey, 'replay')
if ARGV[3] ~= '' then redis.call('HSET', runKey, 'checkpoint', ARGV[3]) end
if ARGV[4] ~= '' then redis.call('HSET', runKey, 'target', ARGV[4]) end
redis.call('DEL', KEYS[4], KEYS[5])

if mode == 'completed' then
  if ARGV[8] ~= '' then redis.call('HSET', runKey, 'lastAction', ARGV[8]) end
  finish(runKeys, runId, 'completed', now, retention, channel)
  local parent = toParent('completed', ARGV[17])
  return { 1, parent[1], parent[2], wakes }
end

redis.call('HSET', runKey, 'status', 'running')
return { 1, -1, -1, wakes }
