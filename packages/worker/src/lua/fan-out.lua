--[[
  Commits a step that fanned out: the parent waits (no worker holds it) until its last child has
  ended. For walks, creates the child run records (`<parent id>.<step>.<index>`), which start
  from the snapshot stored here.

  KEYS[1] run hash           KEYS[2] run error list      KEYS[3] run conflict list
  KEYS[4] run fan-out hash   KEYS[5] run outcome hash

  ARGV[1]  expected step counter
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
  ARGV[17..] walks: each child's checkpoint JSON without `shared` (it starts from the snapshot);
             items: each item's JSON (stored on the fan-out hash as field `i<index>`)

  Returns:  1 committed (the parent's step counter is now ARGV[1] + 1)
            0 stale; 2 cancelled instead; -1 no such run
  Emits: PUBLISH <channel> {type:'ended', ...} when the run is cancelled here.
]]
local runKey = KEYS[1]
local status = redis.call('HGET', runKey, 'status')
if not status then return -1 end
if isFinal(status) then return 0 end
if redis.call('HGET', runKey, 'step') ~= ARGV[1] then return 0 end
local now, runId = ARGV[4], ARGV[11]
if redis.call('HGET', runKey, 'cancel') == '1' then
  finish({ KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5] }, runId, 'cancelled', now, ARGV[12], ARGV[10])
  return 2
end

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
      'childIndex', index, 'target', ARGV[16], 'checkpoint', ARGV[17 + index])
  end
else
  for index = 0, total - 1 do
    redis.call('HSET', KEYS[4], 'i' .. index, ARGV[17 + index])
  end
end
return 1
