--[[
  Conversations (conversation-store.ts, README "Conversations"), by ARGV[1]. A conversation's keys
  live in the partition of its id:

  KEYS[1] the conversation hash: status (running | ended), turns, messages, startedAt, updatedAt,
          participants (JSON array, in the order they joined), budget (JSON), error (JSON),
          spend (JSON { agent: { key: amount } })
  KEYS[2] its log (list of JSON { id, from?, to, at, runId, turn }, oldest first, capped)
  KEYS[3] the runs of its running turns (set)
  KEYS[4] the partition's conversations (sorted set: id -> when it began, epoch ms)
  KEYS[5] the (message id, receiver) pairs in the log (sorted set: JSON [id, to] -> the entry's
          number, the hash's `logged`), trimmed with the log: a receipt's duplicate is found
          without decoding the log

  begin    ARGV[2] id   ARGV[3] budget JSON or ''   ARGV[4] now   ARGV[5] retention (s). Returns 1.
  started  ARGV[2] id   ARGV[3] the turn JSON { ref, runId, turn, message: { id, from?, at }, now }
           ARGV[4] the log's cap   ARGV[5] retention (s)
           Returns { 1 } admitted; { 0, error JSON, running run ids } refused (see passedLimit in
           conversation-store.ts, which this mirrors).
  received ARGV[2] id   ARGV[3] the receipt JSON { to, runId, turn, message: { id, from?, at }, now }
           ARGV[4] the log's cap   ARGV[5] retention (s). Logs it once per message id and
           receiver; a plain run (turn 0) joins the participants. Not counted. Returns 1.
  ended    ARGV[2] id   ARGV[3] the turn's run id. Returns 1.
  spend    ARGV[2] id   ARGV[3] JSON { ref, key, amount, now }   ARGV[4] retention (s)
           Returns { 1 } counted; { 0, error JSON, running run ids } counted, and the conversation
           has ended (now, past the budget's cost, or before).
  Every write keeps the keys for the retention.
]]
local op, id = ARGV[1], ARGV[2]

local function open(now)
  if redis.call('EXISTS', KEYS[1]) == 0 then
    redis.call('HSET', KEYS[1], 'status', 'running', 'turns', 0, 'messages', 0, 'startedAt', now, 'updatedAt', now,
      'participants', '[]')
    redis.call('ZADD', KEYS[4], now, id)
  end
end

-- The cost limit the conversation's spend went past (the sum over its agents), else nil.
local function costPassed(budget, spend)
  local cost = budget and budget.cost
  if type(cost) ~= 'table' then return nil end
  local total = 0
  for _, byKey in pairs(spend) do total = total + (tonumber(byKey[cost.key]) or 0) end
  -- Past max, not at it: sums of fractions land a rounding error above their value (SPEND_TOLERANCE).
  if total - cost.max > 1e-9 * math.max(1, cost.max) then return 'cost: ' .. cost.max .. ' ' .. cost.key end
  return nil
end

local function budgetError(limit)
  return cjson.encode({ code = 'CONVERSATION_BUDGET',
    message = "conversation '" .. id .. "' reached its budget (" .. limit .. '): no further turn runs' })
end

local function keep(retention)
  for _, i in ipairs({ 1, 2, 3, 5 }) do
    if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('EXPIRE', KEYS[i], retention) end
  end
end

local function pairOf(messageId, to)
  return cjson.encode({ messageId, to })
end

-- Appends `entry` to the log, both capped at `cap` entries.
local function append(entry, cap)
  redis.call('RPUSH', KEYS[2], cjson.encode(entry))
  redis.call('LTRIM', KEYS[2], -cap, -1)
  redis.call('ZADD', KEYS[5], redis.call('HINCRBY', KEYS[1], 'logged', 1), pairOf(entry.id, entry.to))
  redis.call('ZREMRANGEBYRANK', KEYS[5], 0, -cap - 1)
end

if op == 'begin' then
  open(tonumber(ARGV[4]))
  if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'budget', ARGV[3]) end
  keep(ARGV[5])
  return 1
end

if op == 'started' then
  local turn = cjson.decode(ARGV[3])
  local now = tonumber(turn.now)
  open(now)
  if redis.call('SISMEMBER', KEYS[3], turn.runId) == 1 then return { 1 } end
  local f = redis.call('HMGET', KEYS[1], 'status', 'turns', 'messages', 'startedAt', 'budget', 'spend')
  local refused = function()
    return { 0, redis.call('HGET', KEYS[1], 'error'), redis.call('SMEMBERS', KEYS[3]) }
  end
  if f[1] == 'ended' then return refused() end
  local turns, messages, startedAt = tonumber(f[2]), tonumber(f[3]), tonumber(f[4])
  local limit
  if f[5] then
    local budget = cjson.decode(f[5])
    if type(budget.turns) == 'number' and turns + 1 > budget.turns then
      limit = 'turns: ' .. budget.turns
    elseif type(budget.messages) == 'number' and messages + 1 > budget.messages then
      limit = 'messages: ' .. budget.messages
    elseif type(budget.wallMs) == 'number' and now - startedAt > budget.wallMs then
      limit = 'wallMs: ' .. budget.wallMs
    else
      limit = costPassed(budget, cjson.decode(f[6] or '{}'))
    end
  end
  if limit then
    redis.call('HSET', KEYS[1], 'status', 'ended', 'error', budgetError(limit), 'updatedAt', now)
    keep(ARGV[5])
    return refused()
  end
  local participants = cjson.decode(redis.call('HGET', KEYS[1], 'participants'))
  local known = false
  for _, ref in ipairs(participants) do if ref == turn.ref then known = true end end
  if not known then table.insert(participants, turn.ref) end
  redis.call('HSET', KEYS[1], 'turns', turns + 1, 'messages', messages + 1, 'updatedAt', now,
    'participants', cjson.encode(participants))
  append({ id = turn.message.id, from = turn.message.from, to = turn.ref, at = turn.message.at,
    runId = turn.runId, turn = turn.turn }, tonumber(ARGV[4]))
  redis.call('SADD', KEYS[3], turn.runId)
  keep(ARGV[5])
  return { 1 }
end

if op == 'received' then
  local receipt = cjson.decode(ARGV[3])
  open(receipt.now)
  if redis.call('ZSCORE', KEYS[5], pairOf(receipt.message.id, receipt.to)) then return 1 end
  if receipt.turn == 0 then
    local participants = cjson.decode(redis.call('HGET', KEYS[1], 'participants'))
    local known = false
    for _, ref in ipairs(participants) do if ref == receipt.to then known = true end end
    if not known then
      table.insert(participants, receipt.to)
      redis.call('HSET', KEYS[1], 'participants', cjson.encode(participants))
    end
  end
  redis.call('HSET', KEYS[1], 'updatedAt', receipt.now)
  append({ id = receipt.message.id, from = receipt.message.from, to = receipt.to, at = receipt.message.at,
    runId = receipt.runId, turn = receipt.turn }, tonumber(ARGV[4]))
  keep(ARGV[5])
  return 1
end

if op == 'ended' then
  redis.call('SREM', KEYS[3], ARGV[3])
  return 1
end

if op == 'spend' then
  local spent = cjson.decode(ARGV[3])
  open(spent.now)
  local f = redis.call('HMGET', KEYS[1], 'status', 'budget', 'spend')
  local spend = cjson.decode(f[3] or '{}')
  local byKey = spend[spent.ref] or {}
  byKey[spent.key] = (tonumber(byKey[spent.key]) or 0) + spent.amount
  spend[spent.ref] = byKey
  redis.call('HSET', KEYS[1], 'spend', cjson.encode(spend), 'updatedAt', spent.now)
  local ended = f[1] == 'ended'
  if not ended then
    local limit = costPassed(f[2] and cjson.decode(f[2]), spend)
    if limit then
      redis.call('HSET', KEYS[1], 'status', 'ended', 'error', budgetError(limit))
      ended = true
    end
  end
  keep(ARGV[4])
  if not ended then return { 1 } end
  return { 0, redis.call('HGET', KEYS[1], 'error'), redis.call('SMEMBERS', KEYS[3]) }
end
return redis.error_reply('conversations: unknown op ' .. tostring(op))
