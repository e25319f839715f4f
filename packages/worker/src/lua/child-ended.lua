--[[
  Records how one child of a waiting parent ended (idempotent per child index) and says what
  the parent does next: start another child, resume (fan-in), or fail at once (fail-fast).

  KEYS[1] parent hash           KEYS[2] parent error list      KEYS[3] parent conflict list
  KEYS[4] parent fan-out hash   KEYS[5] parent outcome hash

  ARGV[1]  parent step counter the child belongs to
  ARGV[2]  child index
  ARGV[3]  outcome JSON
  ARGV[4]  1 if the child completed, 0 if it failed or was cancelled
  ARGV[5]  1 for fail-fast, 0 for collect
  ARGV[6]  run error JSON for the parent, used when it fails fast
  ARGV[7]  now (epoch ms)
  ARGV[8]  events channel
  ARGV[9]  parent run id
  ARGV[10] retention of a finished run (seconds)
  ARGV[11] error record JSON to append to the parent's error list ('' none)

  Returns { code, next }:
    code 0: ignored (the parent no longer waits on this fan-out)
    code 1: recorded; `next` is the index of a child to start now, or -1
    code 2: the parent ended now (failed fast, or a cancel was pending): cancel the siblings
    code 3: recorded, and it was the last child: enqueue the parent's fan-in step
    code 4: this child's outcome was recorded before (a redelivery); `next` is -1
  Emits: PUBLISH <channel> {type:'ended', ...} when the parent ends here.
]]
local runKey, fanOutKey = KEYS[1], KEYS[4]
local status = redis.call('HGET', runKey, 'status')
if status ~= 'waiting' or redis.call('HGET', fanOutKey, 'step') ~= ARGV[1] then return { 0, -1 } end

if redis.call('HSETNX', KEYS[5], ARGV[2], ARGV[3]) == 0 then
  local total = tonumber(redis.call('HGET', fanOutKey, 'total'))
  local ended = tonumber(redis.call('HGET', fanOutKey, 'ended'))
  if ended >= total then return { 3, -1 } end
  return { 4, -1 }
end
if ARGV[11] ~= '' then
  redis.call('RPUSH', KEYS[2], ARGV[11])
  redis.call('LTRIM', KEYS[2], -50, -1)
end

local ended = redis.call('HINCRBY', fanOutKey, 'ended', 1)
local now = ARGV[7]
redis.call('HSET', runKey, 'updatedAt', now)
if redis.call('HGET', runKey, 'cancel') == '1' then
  finish(runKey, ARGV[9], 'cancelled', now, ARGV[10], ARGV[8], KEYS[4], KEYS[5], KEYS[2], KEYS[3])
  return { 2, -1 }
end
if ARGV[4] ~= '1' then
  redis.call('HINCRBY', fanOutKey, 'failed', 1)
  if ARGV[5] == '1' then
    redis.call('HSET', runKey, 'error', ARGV[6])
    finish(runKey, ARGV[9], 'failed', now, ARGV[10], ARGV[8], KEYS[4], KEYS[5], KEYS[2], KEYS[3])
    return { 2, -1 }
  end
end

local total = tonumber(redis.call('HGET', fanOutKey, 'total'))
if ended >= total then return { 3, -1 } end
local started = tonumber(redis.call('HGET', fanOutKey, 'started'))
if started < total then
  redis.call('HINCRBY', fanOutKey, 'started', 1)
  return { 1, started }
end
return { 1, -1 }
