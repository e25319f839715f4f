--[[
  Helpers of the budget scripts (flow control), loaded after run-lifecycle.lua. A budget key K
  has four Redis keys (RedisKeys.budget): window (zset holder -> admitted at, epoch ms), meta
  (hash: 'u:<holder>' units of an admission, 'q:<waiter>' epoch ms until a waiter counts,
  'w:<waiter>' woken since its last refusal, 'concurrency' the last concurrency asked,
  'held' epoch ms until which K is held back, 'seq' arrivals, 'perMs' the longest window asked),
  leases (zset holder -> expiry, epoch ms, '+inf' until given back), waiters (zset task id ->
  priority * 2^40 + arrival). Times are the server's (`TIME`).
]]
local serverTime = redis.call('TIME')
local now = tonumber(serverTime[1]) * 1000 + math.floor(tonumber(serverTime[2]) / 1000)
-- Budget keys idle this long (ms) expire.
local BUDGET_TTL_MS = 86400000

-- The four keys of the i-th budget key among KEYS, after `skip` other keys.
local function budgetKeys(i, skip)
  local base = skip + (i - 1) * 4
  return { window = KEYS[base + 1], meta = KEYS[base + 2], leases = KEYS[base + 3], waiters = KEYS[base + 4] }
end

local function touchBudget(b)
  for _, key in ipairs({ b.window, b.meta, b.leases, b.waiters }) do redis.call('PEXPIRE', key, BUDGET_TTL_MS) end
end

-- The first waiter that still counts (lapsed ones in front are dropped), or nil.
local function headWaiter(b)
  while true do
    local first = redis.call('ZRANGE', b.waiters, 0, 0)[1]
    if not first then return nil end
    if tonumber(redis.call('HGET', b.meta, 'q:' .. first) or '0') > now then return first end
    redis.call('ZREM', b.waiters, first)
    redis.call('HDEL', b.meta, 'q:' .. first)
  end
end

-- Names the first waiter among `wakes`, and marks it woken ('w:<waiter>', see budget-ops woken).
local function wakeHead(b, wakes)
  local head = headWaiter(b)
  if not head then return end
  redis.call('HSET', b.meta, 'w:' .. head, 1)
  for _, w in ipairs(wakes) do if w == head then return end end
  wakes[#wakes + 1] = head
end

-- Names the first `count` waiters among `wakes`, marking each woken.
local function wakeFirst(b, count, wakes)
  if count <= 0 then return end
  headWaiter(b)
  local first = redis.call('ZRANGE', b.waiters, 0, count - 1)
  for _, waiter in ipairs(first) do
    redis.call('HSET', b.meta, 'w:' .. waiter, 1)
    local named = false
    for _, w in ipairs(wakes) do if w == waiter then named = true end end
    if not named then wakes[#wakes + 1] = waiter end
  end
end

-- Admissions of the sliding window of `perMs` ending now: { {at, units}... } oldest first, and their units.
local function windowEntries(b, perMs)
  local flat = redis.call('ZRANGEBYSCORE', b.window, '(' .. (now - perMs), '+inf', 'WITHSCORES')
  local entries, used = {}, 0
  for i = 1, #flat, 2 do
    local units = tonumber(redis.call('HGET', b.meta, 'u:' .. flat[i]) or '1')
    entries[#entries + 1] = { tonumber(flat[i + 1]), units }
    used = used + units
  end
  return entries, used
end

-- Drops admissions older than the longest window, and expired leases.
local function expireBudget(b, perMs)
  local keep = tonumber(redis.call('HGET', b.meta, 'perMs') or '0')
  if perMs and perMs > keep then
    keep = perMs
    redis.call('HSET', b.meta, 'perMs', keep)
  end
  local old = redis.call('ZRANGEBYSCORE', b.window, '-inf', now - keep)
  for _, holder in ipairs(old) do redis.call('HDEL', b.meta, 'u:' .. holder) end
  if #old > 0 then redis.call('ZREMRANGEBYSCORE', b.window, '-inf', now - keep) end
  redis.call('ZREMRANGEBYSCORE', b.leases, '-inf', now)
end
