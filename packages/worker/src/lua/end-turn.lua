--[[
  Ends turn run ARGV[2] of an agent, only if it is the turn in flight (AgentStore.endTurn): a
  completed turn commits its state and takes its message off the inbox; a failed or cancelled
  one moves its message to the dead letters and leaves the state. Then starts the next turn when
  a message waits (same transition), or lets an idle key expire after its idle time.

  KEYS[1..6] the agent's keys (agent-lifecycle.lua)
  ARGV[1] the agent's address   ARGV[2] the turn's run id
  ARGV[3] options, JSON: status (completed | failed | cancelled), messageId, version, now
          (epoch ms, a string), idleTtlMs, maxDeadLetters, remindersKey (the agent's reminders hash),
          valuePrefix, valuesSuffix, values (completed: hashes of the values the new state
          references, claimed for the key in place of the previous state's; absent: none)
  ARGV[4] completed: the new state JSON ('' otherwise)
  ARGV[5] failed or cancelled: the error JSON ('' otherwise)
  ARGV[6..] hash, staging key pairs of values of `values` that may not be stored yet (stagedValues)

  Returns {} stale (not the turn in flight); { 1 } ended; { 1, run id, turn, state, version,
  message } ended, and the next turn started.
]]
local k = agentKeys()
local ref, runId = ARGV[1], ARGV[2]
if redis.call('HGET', k.a, 'r') ~= runId then return {} end
local o = cjson.decode(ARGV[3])
local head = redis.call('LINDEX', k.i, 0)
local isHead = head and cjson.decode(head).id == o.messageId
if o.status == 'completed' then
  redis.call('HSET', k.a, 'st', ARGV[4], 'v', o.version)
  replaceAgentValues(k, ref, o.values, stagedValues(6), o.now, o)
  redis.call('HINCRBY', k.a, 't', 1)
  if isHead then redis.call('LPOP', k.i) end
elseif isHead then
  redis.call('LPOP', k.i)
  -- The texts are joined, not re-encoded: cjson would round numbers of the message to 14 digits.
  redis.call('RPUSH', k.f, '{"message":' .. head .. ',"error":' .. ARGV[5] .. ',"runId":"' .. runId .. '","at":' .. o.now .. '}')
  redis.call('LTRIM', k.f, -tonumber(o.maxDeadLetters), -1)
end
redis.call('HSET', k.a, 'l', o.now)
redis.call('HDEL', k.a, 'r')
redis.call('ZREM', k.r, ref)
local next = activate(k, ref, o.now, false, o)
if next then return { 1, next[1], next[2], next[3], next[4], next[5] } end
local ttl = tonumber(o.idleTtlMs)
-- A key with reminders pending is not idle: it expires after a turn that leaves none.
if ttl and ttl > 0 and redis.call('EXISTS', o.remindersKey) == 0 then
  redis.call('PEXPIRE', k.a, ttl)
  releaseValues(k.a, ref, tonumber(o.now) + ttl, o.now, o)
  if redis.call('EXISTS', k.f) == 1 then redis.call('PEXPIRE', k.f, ttl) end
end
return { 1 }
