--[[
  Claims the members of a sorted set of pending work (member -> when it last went on, epoch ms)
  that have waited since `before`: their time becomes `now`, so that the next worker to look finds
  them claimed for a while, and two workers' heartbeats do not take up the same ones at once.
  Used for the cascades of cancels and the placements of children (RedisKeys.cascades,
  RedisKeys.placements).

  KEYS[1] the sorted set
  ARGV[1] before (epoch ms)   ARGV[2] now (epoch ms)   ARGV[3] most members claimed

  Returns the members claimed.
]]
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, member in ipairs(due) do redis.call('ZADD', KEYS[1], 'XX', ARGV[2], member) end
return due
