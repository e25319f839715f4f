--[[
  Drops the hand-offs a caller applied (apply-handoffs.lua) from the head of the run's list, and
  the run from its partition's pending set once none is left. Hand-offs appended meanwhile, or
  dropped by another caller already, stay as they are.

  KEYS[1] the run's hand-off list   KEYS[2] the partition's pending set (run id -> since when)
  ARGV[1] run id   ARGV[2..] ids of the hand-offs applied

  Returns: how many hand-offs are left
]]
local applied = {}
for i = 2, #ARGV do applied[ARGV[i]] = true end
while true do
  local head = redis.call('LINDEX', KEYS[1], 0)
  if not head or not applied[cjson.decode(head).i] then break end
  redis.call('LPOP', KEYS[1])
end
local left = redis.call('LLEN', KEYS[1])
if left == 0 then redis.call('ZREM', KEYS[2], ARGV[1]) end
return left
