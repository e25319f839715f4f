--[[
  The other budget transitions (flow control), on the server's clock.

  KEYS: four keys per budget key, in the order of ARGV[2]'s list (see budget-lifecycle.lua)
  ARGV[1] operation: release | spend | hold | renew | woken | state
  ARGV[2] JSON:
    release  { holds: [{ key, holder }] }   gives the leases back
    spend    { holds: [{ key, holder }], units }  sets the units of the holder's admission (adds
             one at now if its entry has left the window's keys)
    hold     { keys: [key], forMs }          holds the keys back until now + forMs (never shortens)
    renew    { holds: [{ key, holder }], leaseMs }  extends the leases still held to now + leaseMs
    woken    { keys: [key], waiter }         whether the waiter was woken since the key last
             refused it (clears the mark)
    state    { keys: [key], perMs }          reads a key's budget

  Returns: release: wakes (the first waiters of each key a lease went back to, as many as it has
             free slots, at least one);
           spend, hold, renew: the server's time (epoch ms); woken: 1 or 0;
           state: { leases, unitsInWindow, heldUntil (0: none), waiters... }
]]
local op = ARGV[1]
local o = cjson.decode(ARGV[2])

if op == 'release' then
  local wakes = {}
  for i, hold in ipairs(o.holds) do
    local b = budgetKeys(i, 0)
    if redis.call('ZREM', b.leases, hold.holder) == 1 then
      -- As many waiters as there are free slots now (at least the first).
      local concurrency = tonumber(redis.call('HGET', b.meta, 'concurrency') or '1')
      wakeFirst(b, math.max(1, concurrency - redis.call('ZCARD', b.leases)), wakes)
    end
  end
  return wakes
end
if op == 'spend' then
  local b = budgetKeys(1, 0)
  local holder = o.holds[1].holder
  if not redis.call('ZSCORE', b.window, holder) then redis.call('ZADD', b.window, now, holder) end
  redis.call('HSET', b.meta, 'u:' .. holder, o.units)
  touchBudget(b)
  return now
end
if op == 'hold' then
  for i, _ in ipairs(o.keys) do
    local b = budgetKeys(i, 0)
    local held = tonumber(redis.call('HGET', b.meta, 'held') or '0')
    if now + o.forMs > held then redis.call('HSET', b.meta, 'held', now + o.forMs) end
    touchBudget(b)
  end
  return now
end
if op == 'renew' then
  for i, hold in ipairs(o.holds) do
    local b = budgetKeys(i, 0)
    redis.call('ZADD', b.leases, 'XX', now + o.leaseMs, hold.holder)
  end
  return now
end
if op == 'woken' then
  return redis.call('HDEL', budgetKeys(1, 0).meta, 'w:' .. o.waiter)
end
-- state
local b = budgetKeys(1, 0)
expireBudget(b, nil)
local _, used = windowEntries(b, o.perMs)
local held = tonumber(redis.call('HGET', b.meta, 'held') or '0')
if held <= now then held = 0 end
local reply = { redis.call('ZCARD', b.leases), tostring(used), held }
local waiters = redis.call('ZRANGE', b.waiters, 0, -1)
for _, w in ipairs(waiters) do reply[#reply + 1] = w end
return reply
