--[[
  Starts a turn of an agent that has none in flight and a message in its inbox (AgentStore.activateAgent).

  KEYS[1..6] the agent's keys (agent-lifecycle.lua: hash, inbox, index, running, due, dead letters)
  ARGV[1] the agent's address   ARGV[2] now (epoch ms)
  ARGV[3] its first state, JSON { state, version, incarnation }, or '' (none: a key
          never activated is left due)
  ARGV[4] the value prefix, ARGV[5] the values suffix (agent-lifecycle.lua: its claims)
  ARGV[6] how to make the turn's run, JSON (makeTurnRun's t in agent-lifecycle.lua), or '' (the
          caller makes it)

  Returns { run id, turn, state, version, message JSON, made } when a turn starts (made: 2 when
  its run was made here taken, 1 made, 0 not: makeTurnRun), else {}.
]]
local first = false
if ARGV[3] ~= '' then first = cjson.decode(ARGV[3]) end
local started = activate(agentKeys(), ARGV[1], ARGV[2], first, { valuePrefix = ARGV[4], valuesSuffix = ARGV[5] })
if not started then return {} end
local made = 0
if ARGV[6] ~= nil and ARGV[6] ~= '' then made = makeTurnRun(ARGV[1], started, ARGV[2], cjson.decode(ARGV[6])) end
started[6] = made
return started
