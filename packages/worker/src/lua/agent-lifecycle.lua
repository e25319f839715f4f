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

-- The agent keys of KEYS[1..6] in the order every agent script takes them.
local function agentKeys()
  return { a = KEYS[1], i = KEYS[2], x = KEYS[3], r = KEYS[4], d = KEYS[5], f = KEYS[6] }
end
