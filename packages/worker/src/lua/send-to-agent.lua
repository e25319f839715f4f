--[[
  Appends a message to an agent's inbox from outside any run (`engine.send`, `engine.publish`)
  and starts the agent's turn if it has none in flight (AgentStore.send): send-message.lua and
  activate-agent.lua in one transition, so a send to an idle agent is one round trip. Only if
  the partition's settings hold the partition count the caller took (see create-run.lua).

  KEYS[1..6] the agent's keys (agent-lifecycle.lua: hash, inbox, index, running, due, dead letters)
  KEYS[7] the inbox's waiters set   KEYS[8] the partition's settings hash (field `partitions`)
  ARGV[1] the agent's address   ARGV[2] now (epoch ms)   ARGV[3] message JSON
  ARGV[4] retention (seconds): an inbox untouched that long expires
  ARGV[5] the partition count the caller took
  ARGV[6] its first state, JSON { state, version, incarnation }, or '' (the caller lacks the
          type: the inbox is left due for a process that has it)
  ARGV[7] the value prefix, ARGV[8] the values suffix (agent-lifecycle.lua: its claims)

  Returns { 1, wake, run id, turn, state, version, message JSON }: sent; `wake` is the wake id of
          a run parked on the inbox ('' for none: the caller promotes it), and the turn's fields
          follow when one started. { -1, count } the partition holds another count; { -2 } it
          holds none. Nothing is written unless sent.
]]
local count = redis.call('HGET', KEYS[8], 'partitions')
if not count then return { -2 } end
if count ~= ARGV[5] then return { -1, count } end
local k = agentKeys()
redis.call('RPUSH', k.i, ARGV[3])
local ttl = tonumber(ARGV[4])
if ttl and ttl > 0 then redis.call('EXPIRE', k.i, ttl) end
local wake = redis.call('SPOP', KEYS[7]) or ''
local started = false
if ARGV[6] ~= '' then
  started = activate(k, ARGV[1], ARGV[2], cjson.decode(ARGV[6]), { valuePrefix = ARGV[7], valuesSuffix = ARGV[8] })
else
  redis.call('ZADD', k.d, 'NX', tonumber(ARGV[2]) or 0, ARGV[1])
end
if not started then return { 1, wake } end
return { 1, wake, started[1], started[2], started[3], started[4], started[5] }
