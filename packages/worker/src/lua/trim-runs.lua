--[[
  Drops from the runs index the runs whose records have expired (their time in the expiries set,
  written when they finished, has passed), at most a batch at a time, so that the index does not
  outlive its runs and `list` pages over live runs only.

  KEYS[1] runs index (sorted set by creation time)   KEYS[2] expiries (sorted set: id -> epoch ms)
  ARGV[1] now (epoch ms)   ARGV[2] most ids dropped in this call

  Returns the number of ids dropped (the caller calls again while it gets a full batch).
]]
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #ids == 0 then return 0 end
redis.call('ZREM', KEYS[1], unpack(ids))
redis.call('ZREM', KEYS[2], unpack(ids))
return #ids
