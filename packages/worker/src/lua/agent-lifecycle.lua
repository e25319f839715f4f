--[[
  Keyed agents (agent-store.ts, README "Agents"): the prelude of the agent scripts. An agent's
  keys live in the partition of its address, with its inbox (the mailbox at that address):

  a   the agent hash, its fields named short (an idle agent costs this hash and its index entry;
      its type and key are in its address): st the state (JSON), v its version, t turns committed,
      n turns started, i the key's incarnation (its turn runs are `<i>t<n>`), r the run id of the
      turn in flight, l when its last turn ended (epoch ms)
  i   the inbox (mailbox list; messages JSON, oldest first)
  x   the index of the partition's agents (sorted set, score 0: ordered by address)
  r   turns in flight (sorted set: address -> when started or last claimed, epoch ms)
  d   inboxes due (sorted set: address -> when a message came that no turn may have seen yet)
  f   the dead letters (list of JSON { message, error, runId, at })

  Large states (the claim check, run-lifecycle.lua): `st` holds references for its members over
  `largeValueBytes`; the values it references are claimed for the key, with its address as the
  claimer, as a run claims those of its checkpoint: `a` plus `valuesSuffix` is the set of their
  hashes, created only for a state that references some. A state that replaces another claims its
  own values and lets go of the others; the claims are kept without expiry while the key is, expire
  with it when it is idle (idleTtlMs), and go when it is deleted.
  o: { valuePrefix, valuesSuffix } (redis-keys.ts)
]]

-- The key's state is now one that references `refs` (hashes; nil: none): they are claimed for it
-- (staged texts as claimValues takes them), and the values only its previous state referenced
-- are let go (releaseValue: a value no one else claims goes at once).
local function replaceAgentValues(k, ref, refs, staged, now, o)
  local set = k.a .. o.valuesSuffix
  if redis.call('EXISTS', set) == 1 then
    local keep = {}
    for _, hash in ipairs(type(refs) == 'table' and refs or {}) do keep[hash] = true end
    for _, hash in ipairs(redis.call('SMEMBERS', set)) do
      if not keep[hash] then
        releaseValue(o.valuePrefix .. hash, ref, tonumber(now) - 1, now)
        redis.call('SREM', set, hash)
      end
    end
  end
  claimValues(k.a, ref, refs, staged, o)
end

-- Starts a turn when the agent has none in flight and its inbox holds a message: its state is
-- made from `first` when it has none. Returns { run id, turn number, state, version, message } or
-- false. Takes the address off the due inboxes either way: whoever reads it next finds it handled.
-- o: { valuePrefix, valuesSuffix }: the claims of a key kept for its idle time are kept for good again.
local function activate(k, ref, now, first, o)
  redis.call('ZREM', k.d, ref)
  if redis.call('HEXISTS', k.a, 'r') == 1 then return false end
  local head = redis.call('LINDEX', k.i, 0)
  if not head then return false end
  if redis.call('EXISTS', k.a) == 0 then
    if type(first) ~= 'table' then
      -- No process with the type has seen it yet: left due for one that has it.
      redis.call('ZADD', k.d, now, ref)
      return false
    end
    redis.call('HSET', k.a, 'st', first.state, 'v', first.version, 't', 0, 'n', 0, 'i', first.incarnation)
    redis.call('ZADD', k.x, 0, ref)
  else
    -- An idle key kept for idleTtlMs is kept for good while a turn runs, and so are its values.
    if redis.call('PERSIST', k.a) == 1 then holdValues(k.a, ref, o) end
    redis.call('PERSIST', k.f)
  end
  local seq = redis.call('HINCRBY', k.a, 'n', 1)
  local fields = redis.call('HMGET', k.a, 'i', 'st', 'v')
  local runId = fields[1] .. 't' .. seq
  redis.call('HSET', k.a, 'r', runId)
  redis.call('ZADD', k.r, now, ref)
  return { runId, seq, fields[2], fields[3], head }
end

-- Whether this script made a turn's run taken already: a worker's chain runs one turn next, so
-- one transition takes one run at most (the key's own next turn first, then its sends' turns).
local turnRunTaken = false

-- Writes the run of turn `a` (activate's answer: run id, turn, state, version, message JSON):
-- `fields` (HSET pairs, flat), its times, its turn, its place in the runs index, and, taken by a
-- worker's chain (n.takenKey, unless the script took a run already), status `running` and its
-- first step's task among that worker's taken tasks; else status `queued`. n: key (the run's
-- hash), runs, sequence (the partition's runs index and sequence), changes (channel), takenKey and
-- taken (the worker's taken set and the first step's task id). Returns 2 made taken, 1 made.
local function writeTurnRun(ref, a, now, n, fields)
  local take = n.takenKey ~= nil and not turnRunTaken
  redis.call('HSET', n.key, unpack(fields))
  -- The message's text is joined, not re-encoded (cjson would round its numbers).
  redis.call('HSET', n.key, 'createdAt', now, 'updatedAt', now, 'status', take and 'running' or 'queued',
    'turn', '{"agent":' .. cjson.encode(ref) .. ',"turn":' .. a[2] .. ',"message":' .. a[5] .. '}')
  if take then
    turnRunTaken = true
    redis.call('HSET', n.key, 'startedAt', now)
    redis.call('SADD', n.takenKey, n.taken)
  else
    redis.call('HDEL', n.key, 'startedAt')
  end
  indexRun(n.runs, n.sequence, a[1], now)
  changed(n.key, a[1], n)
  if take then return 2 end
  return 1
end

-- Makes the run of turn `next` (activate's answer) from n = o.nextRun (TurnEnd.nextRun),
-- prepared from the state just committed: only the run of that id (n.id), for a message in no
-- conversation (whose turn is admitted first). n.fields: the record's fields (writeTurnRun).
-- Returns 2 made taken, 1 made, 0 not.
local function makeNextTurn(ref, next, now, n)
  if type(n) ~= 'table' or n.id ~= next[1] then return 0 end
  if cjson.decode(next[5]).conversation ~= nil then return 0 end
  return writeTurnRun(ref, next, now, n, n.fields)
end

-- Makes the run of turn `a` (activate's answer) from t, a TurnRunTemplate (agent-store.ts) plus
-- where runs live (writeTurnRun's n, without key and taken, and runPrefix, partition,
-- partitions; target encoded): only for a state of the template's version, of at most
-- maxStateBytes and no reference to a value stored apart, a run id in this partition, and a
-- message in no conversation. Returns 2 made taken, 1 made, 0 not.
local function makeTurnRun(ref, a, now, t)
  if type(t) ~= 'table' or tonumber(a[4]) ~= tonumber(t.version) then return 0 end
  local state = a[3]
  if #state > tonumber(t.maxStateBytes) or string.find(state, '"$qfValue"', 1, true) then return 0 end
  local count = tonumber(t.partitions)
  if count and count > 1 and (crc16(a[1]) % 16384) % count ~= tonumber(t.partition) then return 0 end
  if cjson.decode(a[5]).conversation ~= nil then return 0 end
  t.key = t.runPrefix .. a[1]
  if t.takenKey then t.taken = a[1] .. '-0' end
  local fields = { 'flow', t.flow, 'fingerprint', t.fingerprint, 'step', 0, 'attempt', 0,
    'checkpoint', '{"shared":' .. state .. t.checkpointTail, 'target', t.target }
  if t.priority then
    fields[#fields + 1] = 'priority'
    fields[#fields + 1] = t.priority
  end
  return writeTurnRun(ref, a, now, t, fields)
end

-- Starts the turns of agents a transition delivered to (o.starts: TurnStart in agent-store.ts,
-- each { ref, keys (the agent's six keys, agentKeys' order), first, run (makeTurnRun's t, or
-- absent) }), as activate-agent.lua would. Returns per start { ref } (no turn started) or { ref,
-- run id, turn, state, version, message JSON, made }.
local function startDelivered(starts, now, o)
  local replies = {}
  for _, s in ipairs(type(starts) == 'table' and starts or {}) do
    local k = { a = s.keys[1], i = s.keys[2], x = s.keys[3], r = s.keys[4], d = s.keys[5], f = s.keys[6] }
    local started = activate(k, s.ref, now, s.first, o)
    if started then
      replies[#replies + 1] = { s.ref, started[1], started[2], started[3], started[4], started[5],
        makeTurnRun(s.ref, started, now, s.run) }
    else
      replies[#replies + 1] = { s.ref }
    end
  end
  return replies
end

-- The agent keys of KEYS[first..first + 5] in the order every agent script takes them (from
-- KEYS[1] unless said).
local function agentKeys(first)
  local f = first or 1
  return { a = KEYS[f], i = KEYS[f + 1], x = KEYS[f + 2], r = KEYS[f + 3], d = KEYS[f + 4], f = KEYS[f + 5] }
end

-- Ends turn run `runId` of agent `ref`, only if it is the turn in flight (AgentStore.endTurn;
-- end-turn.lua, or commit-step.lua with the run's last step): a completed turn commits its state
-- and takes its message off the inbox; a failed or cancelled one moves its message to the dead
-- letters and leaves the state. Then starts the next turn when a message waits (same
-- transition), or lets an idle key expire after its idle time.
-- o: status (completed | failed | cancelled), messageId, version, now (epoch ms, a string),
--    idleTtlMs, maxDeadLetters, remindersKey (the agent's reminders hash), valuePrefix,
--    valuesSuffix, values (completed: hashes of the values the new state references, claimed for
--    the key in place of the previous state's; absent: none)
-- state: completed: the new state JSON   errorText: failed or cancelled: the error JSON
-- staged: the texts of `values` that may not be stored yet (stagedValues)
-- o.nextRun: the next turn's run, made when it starts (makeNextTurn).
-- Returns {} stale (not the turn in flight); { 1 } ended; { 1, run id, turn, state, version,
-- message, made } ended, and the next turn started (made: makeNextTurn's answer).
local function endTurn(k, ref, runId, o, state, errorText, staged)
  if redis.call('HGET', k.a, 'r') ~= runId then return {} end
  local head = redis.call('LINDEX', k.i, 0)
  local isHead = head and cjson.decode(head).id == o.messageId
  if o.status == 'completed' then
    redis.call('HSET', k.a, 'st', state, 'v', o.version)
    replaceAgentValues(k, ref, o.values, staged, o.now, o)
    redis.call('HINCRBY', k.a, 't', 1)
    if isHead then redis.call('LPOP', k.i) end
  elseif isHead then
    redis.call('LPOP', k.i)
    -- The texts are joined, not re-encoded: cjson would round numbers of the message to 14 digits.
    redis.call('RPUSH', k.f, '{"message":' .. head .. ',"error":' .. errorText .. ',"runId":"' .. runId .. '","at":' .. o.now .. '}')
    redis.call('LTRIM', k.f, -tonumber(o.maxDeadLetters), -1)
  end
  redis.call('HSET', k.a, 'l', o.now)
  redis.call('HDEL', k.a, 'r')
  redis.call('ZREM', k.r, ref)
  local next = activate(k, ref, o.now, false, o)
  if next then
    local made = makeNextTurn(ref, next, o.now, o.nextRun)
    -- A next turn whose run the caller makes is the one its chain claims: no send's turn is taken.
    if made == 0 and type(o.nextRun) == 'table' and o.nextRun.takenKey then turnRunTaken = true end
    return { 1, next[1], next[2], next[3], next[4], next[5], made }
  end
  local ttl = tonumber(o.idleTtlMs)
  -- A key with reminders pending is not idle: it expires after a turn that leaves none.
  if ttl and ttl > 0 and redis.call('EXISTS', o.remindersKey) == 0 then
    redis.call('PEXPIRE', k.a, ttl)
    releaseValues(k.a, ref, tonumber(o.now) + ttl, o.now, o)
    if redis.call('EXISTS', k.f) == 1 then redis.call('PEXPIRE', k.f, ttl) end
  end
  return { 1 }
end
