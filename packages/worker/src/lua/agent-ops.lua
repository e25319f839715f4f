--[[
  The other transitions of an agent (AgentStore.deleteAgent, redeliver), by ARGV[1]:

  KEYS[1..6] the agent's keys (agent-lifecycle.lua)
  delete     ARGV[2] the address, ARGV[3] its reminders hash, ARGV[4] the partition's due reminders
             (reminders.lua), ARGV[5] the value prefix, ARGV[6] the values suffix, ARGV[7] now
             (epoch ms): deletes hash, inbox, dead letters and reminders, and the index, running and
             due entries, and lets go of the values its state claimed. Returns { 1, running run id
             or '' }, or { 0 } for no such key.
  redeliver  ARGV[2] the address, ARGV[3] a dead letter's message id, ARGV[4] now (epoch ms):
             moves it to the end of the inbox and marks the inbox due. Returns 1, or 0 when
             there is no such dead letter.
  seed       ARGV[2] the address, ARGV[3] its first state JSON { state, version, incarnation, values
             (hashes the state references, or absent) }, ARGV[4] the value prefix, ARGV[5] the values
             suffix, ARGV[6..] hash, staging key pairs (stagedValues): makes the key with that
             state, idle, claiming its values, unless it exists (a fork's copy). Returns 1 made, else 0.
]]
local k = agentKeys()
local op, ref = ARGV[1], ARGV[2]
if op == 'delete' then
  local running = redis.call('HGET', k.a, 'r')
  local existed = redis.call('DEL', k.a)
  redis.call('DEL', k.i, k.f)
  redis.call('ZREM', k.x, ref)
  redis.call('ZREM', k.r, ref)
  redis.call('ZREM', k.d, ref)
  for _, field in ipairs(redis.call('HKEYS', ARGV[3])) do
    if string.sub(field, 1, 5) == 'spec:' then redis.call('ZREM', ARGV[4], string.sub(field, 6) .. ' ' .. ref) end
  end
  redis.call('DEL', ARGV[3])
  releaseValues(k.a, ref, tonumber(ARGV[7]) - 1, ARGV[7], { valuePrefix = ARGV[5], valuesSuffix = ARGV[6] })
  if existed == 0 then return { 0 } end
  return { 1, running or '' }
end
if op == 'seed' then
  if redis.call('EXISTS', k.a) == 1 then return 0 end
  local first = cjson.decode(ARGV[3])
  redis.call('HSET', k.a, 'st', first.state, 'v', first.version, 't', 0, 'n', 0, 'i', first.incarnation)
  redis.call('ZADD', k.x, 0, ref)
  claimValues(k.a, ref, first.values, stagedValues(6), { valuePrefix = ARGV[4], valuesSuffix = ARGV[5] })
  return 1
end
if op == 'redeliver' then
  for _, letter in ipairs(redis.call('LRANGE', k.f, 0, -1)) do
    local decoded = cjson.decode(letter)
    if decoded.message.id == ARGV[3] then
      redis.call('LREM', k.f, 1, letter)
      -- The message's own text, cut out of the letter: no re-encoding of its numbers.
      local message = string.match(letter, '^{"message":(.*),"error":')
      redis.call('RPUSH', k.i, message)
      redis.call('ZADD', k.d, ARGV[4], ref)
      return 1
    end
  end
  return 0
end
return redis.error_reply('agent-ops: unknown op ' .. tostring(op))
