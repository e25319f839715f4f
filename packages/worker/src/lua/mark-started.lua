--[[
  Marks a queued run as running when its first step starts (before any commit), so `get` tells
  a run that a worker has taken from one still waiting for a worker.

  KEYS[1] run hash
  ARGV[1] now (epoch ms)
  Returns: 1 marked; 0 the run was not queued (already running, ended, or gone)
]]
if redis.call('HGET', KEYS[1], 'status') ~= 'queued' then return 0 end
redis.call('HSET', KEYS[1], 'status', 'running', 'startedAt', ARGV[1], 'updatedAt', ARGV[1])
return 1
