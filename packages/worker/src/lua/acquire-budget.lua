--[[
  Admits one try of a visit against every limit it names, or refuses it by the first key without
  budget (flow control, RunStore.acquireBudget), on the server's clock.

  KEYS[1] the run hash (its status goes from throttled back to running when admitted; may not exist)
  KEYS[2..] four keys per limit, in the order of o.limits (see budget-lifecycle.lua)
  KEYS[last] with o.indexed: the budgets index (zset key -> last use, epoch ms), after the limits'

  ARGV[1] options, JSON:
    holder     names this admission (its lease and window entry)
    waiter     the visit's task id (queued when refused, woken when its turn comes)
    runId      the run (absent for a fan-out item)
    priority   lower first among waiters (0 or absent: before every priority)
    leaseMs    lease length in ms (absent: until given back)
    recheckMs  longest a refused waiter sleeps, in ms
    wakeMax    most waiters an admission wakes
    changes    the changes channel
    limits     { key, concurrency?, rate? { max, perMs }, units } each
    indexed    true when KEYS ends with the budgets index: each key's limits ('limits' in its
               meta, JSON) and its use are recorded there, for Engine.budgets

  A key refuses when it is held back (RateLimitedError), or has no room for this try after the
  waiters before it in its queue (FIFO: a later visit never overtakes): leases + waiters ahead
  reach `concurrency`, or the window has no room for `units` × (waiters ahead + 1) (a try
  costing more than `max` needs an empty window).

  Returns { 1, wakes, now } admitted at now (epoch ms): a lease per concurrency limit, units in each rate window, the
            waiter off every queue;
          { 0, key, delayMs, wakes } refused by `key`: the waiter queued there (keeping an
            earlier place) and in no other queue; delayMs until its budget allows it (window:
            when enough units leave it for it and those before it; hold: its end; leases: the
            first expiry), at most recheckMs.
    wakes: waiter task ids to promote (the first waiters of a queue, as many as its budget may
           now have room for).
  Emits: PUBLISH <changes> when a throttled run goes back to running.
  Logs `released` (the run's event log, logEvent) then.
]]
local o = cjson.decode(ARGV[1])
local SPAN = 1099511627776 -- 2^40: arrivals per priority step
local GRACE_MS = 30000     -- a waiter counts this long past the moment it looks again
local wakes = {}
local limits = o.limits

-- How many waiters are before this one (all of them when it is not queued); lapsed heads dropped.
local function aheadOf(b, waiter)
  headWaiter(b)
  local rank = redis.call('ZRANK', b.waiters, waiter)
  if rank then return rank end
  return redis.call('ZCARD', b.waiters)
end

-- How long until `need` more units fit in the window, or nil when they fit now.
local function rateDelay(b, rate, need)
  local entries, used = windowEntries(b, rate.perMs)
  local allowed = rate.max - need
  if used <= allowed then return nil end
  for _, e in ipairs(entries) do
    used = used - e[2]
    if used <= allowed then return e[1] + rate.perMs - now end
  end
  return rate.perMs
end

if o.indexed then
  for i, limit in ipairs(limits) do
    redis.call('ZADD', KEYS[#KEYS], now, limit.key)
    redis.call('HSET', budgetKeys(i, 1).meta, 'limits', cjson.encode({ concurrency = limit.concurrency, rate = limit.rate }))
  end
  redis.call('PEXPIRE', KEYS[#KEYS], BUDGET_TTL_MS)
end

for i, limit in ipairs(limits) do
  local b = budgetKeys(i, 1)
  local rate = limit.rate
  if type(rate) ~= 'table' then rate = nil end
  expireBudget(b, rate and rate.perMs)
  -- A waiter gets in when the budget has room for it and for every waiter before it (FIFO).
  local ahead = aheadOf(b, o.waiter)
  local delay = nil
  local held = tonumber(redis.call('HGET', b.meta, 'held') or '0')
  if held > now then
    delay = held - now
  else
    if type(limit.concurrency) == 'number' and redis.call('ZCARD', b.leases) + ahead >= limit.concurrency then
      local first = redis.call('ZRANGE', b.leases, 0, 0, 'WITHSCORES')
      local expiry = tonumber(first[2])
      if expiry and expiry < now + o.recheckMs then delay = math.max(1, expiry - now) else delay = o.recheckMs end
    end
    if rate then
      -- This try's units after those of the waiters before it (a try over max needs an empty window).
      local need = math.min(rate.max, limit.units * (ahead + 1))
      if limit.units > rate.max then need = rate.max end
      local wait = rateDelay(b, rate, need)
      if wait and (not delay or wait > delay) then delay = wait end
    end
  end
  if delay then
    for j, other in ipairs(limits) do
      if j ~= i then
        local ob = budgetKeys(j, 1)
        if redis.call('ZREM', ob.waiters, o.waiter) == 1 then
          redis.call('HDEL', ob.meta, 'q:' .. o.waiter)
          wakeHead(ob, wakes)
        end
      end
    end
    local wait = math.max(1, math.min(delay, o.recheckMs))
    if not redis.call('ZSCORE', b.waiters, o.waiter) then
      local seq = redis.call('HINCRBY', b.meta, 'seq', 1)
      redis.call('ZADD', b.waiters, (tonumber(o.priority) or 0) * SPAN + seq, o.waiter)
    end
    redis.call('HSET', b.meta, 'q:' .. o.waiter, now + wait + GRACE_MS)
    redis.call('HDEL', b.meta, 'w:' .. o.waiter)
    touchBudget(b)
    return { 0, limit.key, wait, wakes }
  end
end

for i, limit in ipairs(limits) do
  local b = budgetKeys(i, 1)
  redis.call('ZREM', b.waiters, o.waiter)
  redis.call('HDEL', b.meta, 'q:' .. o.waiter, 'w:' .. o.waiter)
  if type(limit.concurrency) == 'number' then
    redis.call('HSET', b.meta, 'concurrency', limit.concurrency) -- for release: how many to wake
    local expiry = '+inf'
    if type(o.leaseMs) == 'number' then expiry = now + o.leaseMs end
    redis.call('ZADD', b.leases, expiry, o.holder)
  end
  if type(limit.rate) == 'table' then
    redis.call('ZADD', b.window, now, o.holder)
    redis.call('HSET', b.meta, 'u:' .. o.holder, limit.units)
  end
  -- The waiters the budget may now have room for go on (each checks again, atomically).
  local room = o.wakeMax
  if type(limit.concurrency) == 'number' then room = math.min(room, limit.concurrency - redis.call('ZCARD', b.leases)) end
  if type(limit.rate) == 'table' and limit.units > 0 then
    local _, used = windowEntries(b, limit.rate.perMs)
    room = math.min(room, math.floor((limit.rate.max - used) / limit.units))
  end
  wakeFirst(b, room, wakes)
  touchBudget(b)
end

if type(o.runId) == 'string' and redis.call('HGET', KEYS[1], 'status') == 'throttled' then
  local run = redis.call('HMGET', KEYS[1], 'step', 'throttledBy')
  logEvent(KEYS[1], { at = tonumber(now), step = tonumber(run[1] or '0'), kind = 'released', key = run[2] or '' })
  redis.call('HSET', KEYS[1], 'status', 'running')
  redis.call('HDEL', KEYS[1], 'throttledBy')
  changed(KEYS[1], o.runId, o)
end
return { 1, wakes, now }
