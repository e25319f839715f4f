-- Shared by the scripts below (prepended to each): ends a run and announces it.
-- finish(runKey, runId, status, now, retentionSeconds, channel, extraKeys...)
local function finish(runKey, runId, status, now, retention, channel, ...)
  redis.call('HSET', runKey, 'status', status, 'finishedAt', now, 'updatedAt', now)
  redis.call('HSETNX', runKey, 'startedAt', now)
  local ttl = tonumber(retention)
  if ttl and ttl > 0 then
    redis.call('EXPIRE', runKey, ttl)
    for _, key in ipairs({...}) do redis.call('EXPIRE', key, ttl) end
  end
  redis.call('PUBLISH', channel, cjson.encode({ type = 'ended', runId = runId, status = status }))
end

local function isFinal(status)
  return status == 'completed' or status == 'failed' or status == 'cancelled'
end
