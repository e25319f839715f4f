--[[
  Appends one message to the inboxes of agents from outside any run (`engine.send`,
  `engine.publish`) and starts the turn of each that has none in flight (AgentStore.send):
  send-message.lua and activate-agent.lua in one transition per agent, all of one partition in one
  script, so a send to idle agents is one round trip. The caller bounds how many agents one script
  takes (a publish to many keys is windowed). Only if the partition's settings hold the partition
  count the caller took (see create-run.lua).

  KEYS[1] the partition's settings hash (field `partitions`)
  KEYS[7j-5 .. 7j+1] (agent j, from 1) its keys (agent-lifecycle.lua: hash, inbox, index, running,
          due, dead letters), then its inbox's waiters set
  ARGV[1] now (epoch ms)   ARGV[2] message JSON   ARGV[3] retention (seconds): an inbox untouched
          that long expires   ARGV[4] the partition count the caller took
  ARGV[5] the value prefix, ARGV[6] the values suffix (agent-lifecycle.lua: an agent's claims)
  ARGV[7] how to make the runs of the turns started, JSON: agent type -> makeTurnRun's t
          (agent-lifecycle.lua); a type not there: the caller makes them
  ARGV[2j+6] agent j's address   ARGV[2j+7] its first state, JSON { state, version, incarnation },
          or '' (the caller lacks the type: the inbox is left due for a process that has it)

  Returns { 1, agent 1's reply, agent 2's reply, ... }: sent, each reply { wake, run id, turn,
          state, version, message JSON, made }, where `wake` is the wake id of a run parked on the
          inbox ('' for none: the caller promotes it) and the turn's fields follow when one started
          (made: makeTurnRun's answer).
          { -1, count } the partition holds another count; { -2 } it holds none. Nothing is
          written unless sent.
]]
local count = redis.call('HGET', KEYS[1], 'partitions')
if not count then return { -2 } end
if count ~= ARGV[4] then return { -1, count } end
local now, ttl = ARGV[1], tonumber(ARGV[3])
local values = { valuePrefix = ARGV[5], valuesSuffix = ARGV[6] }
local templates = cjson.decode(ARGV[7])
local replies = { 1 }
for j = 1, (#KEYS - 1) / 7 do
  local base = 7 * (j - 1) + 1
  local k = {
    a = KEYS[base + 1], i = KEYS[base + 2], x = KEYS[base + 3],
    r = KEYS[base + 4], d = KEYS[base + 5], f = KEYS[base + 6],
  }
  local ref, first = ARGV[2 * j + 6], ARGV[2 * j + 7]
  redis.call('RPUSH', k.i, ARGV[2])
  if ttl and ttl > 0 then redis.call('EXPIRE', k.i, ttl) end
  local wake = redis.call('SPOP', KEYS[base + 7]) or ''
  local started = false
  if first ~= '' then
    started = activate(k, ref, now, cjson.decode(first), values)
  else
    redis.call('ZADD', k.d, 'NX', tonumber(now) or 0, ref)
  end
  if started then
    local made = makeTurnRun(ref, started, now, templates[string.match(ref, '^agent:([^/]+)/')])
    replies[#replies + 1] = { wake, started[1], started[2], started[3], started[4], started[5], made }
  else
    replies[#replies + 1] = { wake }
  end
end
return replies
