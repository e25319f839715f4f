--[[
  Reads a run's record for the step about to run, and marks a queued run as running (its first
  step starts now, before any commit) if this worker can run it, so `get` tells a run a worker
  has taken from one still waiting for a worker. One round trip for both.

  KEYS[1] run hash
  ARGV[1] now (epoch ms)
  ARGV[2..] pairs of flow name and graph fingerprint this worker runs
  Returns: the hash as a flat list of fields and values (empty when there is no such run)
]]
local run = redis.call('HMGET', KEYS[1], 'status', 'flow', 'fingerprint', 'createdAt')
if run[1] == 'queued' then
  -- Never before its creation, which another process stamped on its own reading of the clock.
  local now = string.format('%d', math.max(tonumber(ARGV[1]), tonumber(run[4]) or 0))
  for i = 2, #ARGV, 2 do
    if ARGV[i] == run[2] and ARGV[i + 1] == run[3] then
      redis.call('HSET', KEYS[1], 'status', 'running', 'startedAt', now, 'updatedAt', now)
      break
    end
  end
end
return redis.call('HGETALL', KEYS[1])
