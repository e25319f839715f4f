--[[
  Ends turn run ARGV[2] of an agent, only if it is the turn in flight (AgentStore.endTurn): see
  endTurn in agent-lifecycle.lua. (A turn whose key is in its run's partition ends with its run's
  last step instead, in commit-step.lua.)

  KEYS[1..6] the agent's keys (agent-lifecycle.lua)
  ARGV[1] the agent's address   ARGV[2] the turn's run id
  ARGV[3] options, JSON: endTurn's `o` (agent-lifecycle.lua)
  ARGV[4] completed: the new state JSON ('' otherwise)
  ARGV[5] failed or cancelled: the error JSON ('' otherwise)
  ARGV[6..] hash, staging key pairs of values of `values` that may not be stored yet (stagedValues)

  Returns endTurn's answer: {} stale (not the turn in flight); { 1 } ended; { 1, run id, turn,
  state, version, message, made } ended, and the next turn started.
]]
return endTurn(agentKeys(), ARGV[1], ARGV[2], cjson.decode(ARGV[3]), ARGV[4], ARGV[5], stagedValues(6))
