-- Prelude of every script (prepended by scripts.ts): the transitions several scripts share.

local function isFinal(status)
  return status == 'completed' or status == 'failed' or status == 'cancelled'
end

-- Whether the run still stands where a step started: same step counter and same park count (a
-- step that parked and was woken runs again at the same step; writes of an older run of it must
-- not land). The guard of every write a step makes.
local function atStep(runKey, step, parkCount)
  local at = redis.call('HMGET', runKey, 'step', 'parkCount')
  return at[1] == step and (at[2] or '0') == parkCount
end

-- The run hash's `streamTry` field: JSON { step, tries = { { t = token, a = attempt, w = worker }, ... },
-- ended } of the tries of one step that wrote the run's stream (append-stream.lua), oldest first,
-- the last the latest writer; `ended` once a transition of that step ended the latest (so that a
-- try after it is no restart). Returns the decoded record, or nil (none, or another format).
local function streamTryOf(runKey)
  local raw = redis.call('HGET', runKey, 'streamTry')
  if not raw then return nil end
  local ok, record = pcall(cjson.decode, raw)
  if not ok or type(record) ~= 'table' or type(record.tries) ~= 'table' then return nil end
  return record
end

-- Marks the latest writer of the run's stream ended: called by every transition that ends a try
-- of a step (commit-step.lua in every mode, park-run.lua, fan-out.lua, reopen-run.lua).
local function endStreamTry(runKey)
  local record = streamTryOf(runKey)
  if record and not record.ended then
    record.ended = true
    redis.call('HSET', runKey, 'streamTry', cjson.encode(record))
  end
end

-- Announces a change of a run to live views (`engine.watch`), on the changes channel: not for
-- fan-out children (thousands would flood every view; their parent's change says one ended).
-- o: { changes = channel }
-- Puts a new run in its partition's runs index: the score is its creation time in ms plus a
-- sequence fraction (2048ths: exact in a double for epoch ms), so runs created in the same
-- millisecond stay in creation order.
local function indexRun(runsKey, sequenceKey, runId, now)
  local sequence = redis.call('INCR', sequenceKey) % 2048
  redis.call('ZADD', runsKey, string.format('%.6f', tonumber(now) + sequence / 2048), runId)
end

local function changed(runKey, runId, o)
  local run = redis.call('HMGET', runKey, 'status', 'step', 'parentId')
  if run[1] and not run[3] then
    redis.call('PUBLISH', o.changes, cjson.encode({ runId = runId, status = run[1], steps = tonumber(run[2]) or 0 }))
  end
end

--[[
  The claim check (claim-check.ts in the runtime): values of `shared` stored once, apart.
    <valuePrefix><hash>        string: the value's JSON text (hash: its sha256, hex)
    <valuePrefix><hash>:refs   sorted set: run id -> when that run's record expires (epoch ms),
                               +inf while the run is kept without expiry
    <run key><valuesSuffix>    set: the hashes the run claimed
  A transition claims the values its stored forms reference for its run in the same script, so
  no crash leaves a stored form without its claim. A value (and its refs) has no expiry while a
  run that claimed it has none, and otherwise expires a minute after the last of them: it goes
  with the last run that references it, and never outlives them all (nothing leaks forever).
  o: { valuePrefix, valuesSuffix } (redis-keys.ts); without them nothing is claimed or released.
]]

-- Values a transition brings, from ARGV[first] on as hash, staging key pairs: the caller stored
-- each text under a staging key of its own beforehand (with an expiry), so that no large value
-- passes through a script (Redis runs one script at a time).
local function stagedValues(first)
  local staged = {}
  if type(first) ~= 'number' then return staged end
  for i = first, #ARGV, 2 do staged[ARGV[i]] = ARGV[i + 1] end
  return staged
end

-- Claims the values `refs` (hashes) for run `runId`. A staged text becomes the value's (a rename:
-- no copy), unless the value is stored already (its text is the same: it is named by its hash).
local function claimValues(runKey, runId, refs, staged, o)
  if type(refs) ~= 'table' or #refs == 0 or not o.valuePrefix then return end
  for _, hash in ipairs(refs) do
    local key = o.valuePrefix .. hash
    local staging = staged[hash]
    if staging and redis.call('EXISTS', staging) == 1 then
      if redis.call('EXISTS', key) == 0 then redis.call('RENAME', staging, key) else redis.call('UNLINK', staging) end
    end
    redis.call('PERSIST', key)
    redis.call('ZADD', key .. ':refs', '+inf', runId)
    redis.call('PERSIST', key .. ':refs')
  end
  redis.call('SADD', runKey .. o.valuesSuffix, unpack(refs))
end

-- The run is kept without expiry again (reopened): so are the values it claimed.
local function holdValues(runKey, runId, o)
  if not o.valuePrefix then return end
  local runValues = runKey .. o.valuesSuffix
  redis.call('PERSIST', runValues)
  for _, hash in ipairs(redis.call('SMEMBERS', runValues)) do
    local key = o.valuePrefix .. hash
    redis.call('ZADD', key .. ':refs', '+inf', runId)
    redis.call('PERSIST', key)
    redis.call('PERSIST', key .. ':refs')
  end
end

-- The claim of value `key` by `owner` (a run id, or a keyed agent's address) ends at `expiresAt`
-- (epoch ms; at or before `now`: it ended now): the value then expires with the last claim, a
-- minute after (or at once when none is left), unless one is kept without expiry.
local function releaseValue(key, owner, expiresAt, now)
  local refs = key .. ':refs'
  redis.call('ZADD', refs, string.format('%d', expiresAt), owner)
  redis.call('ZREMRANGEBYSCORE', refs, '-inf', '(' .. now) -- claimers gone by now
  local last = redis.call('ZRANGE', refs, -1, -1, 'WITHSCORES')
  if #last == 0 then
    redis.call('DEL', key, refs)
  elseif last[2] ~= 'inf' then
    -- Relative to `now` (the times are the callers', whose clock may differ from Redis' own).
    local ttl = string.format('%d', tonumber(last[2]) - tonumber(now) + 60000)
    redis.call('PEXPIRE', key, ttl)
    redis.call('PEXPIRE', refs, ttl)
  end
end

-- The run's record expires at `expiresAt` (epoch ms; at or before `now`: it is gone now): each
-- value it claimed then expires with the last run that claimed it (releaseValue).
local function releaseValues(runKey, runId, expiresAt, now, o)
  if not o.valuePrefix then return end
  local runValues = runKey .. o.valuesSuffix
  local hashes = redis.call('SMEMBERS', runValues)
  if #hashes == 0 then return end
  for _, hash in ipairs(hashes) do releaseValue(o.valuePrefix .. hash, runId, expiresAt, now) end
  if expiresAt <= tonumber(now) then redis.call('DEL', runValues)
  else redis.call('PEXPIRE', runValues, string.format('%d', expiresAt - tonumber(now))) end
end

-- Redis keeps a hash that once held a value over `hash-max-listpack-value` (64 bytes by default:
-- a checkpoint with its frames) in its hashtable encoding for good, about 2.5 times the bytes of
-- the listpack its ended fields fit (1,104 against 432 for a no-op fan-out child). Written again,
-- it takes the small encoding. Only when it would (the default limits: 128 fields, 64 bytes).
local function compactHash(key)
  if redis.call('OBJECT', 'ENCODING', key) ~= 'hashtable' then return end
  local fields = redis.call('HGETALL', key)
  if #fields > 256 then return end
  for i = 1, #fields do
    if string.len(fields[i]) > 64 then return end
  end
  redis.call('DEL', key)
  redis.call('HSET', key, unpack(fields))
end

-- Ends a run: status, timings, the end marker of its stream, retention of its keys (and of its
-- idempotency key), and the `ended` event. The marker goes after every entry its steps wrote (a
-- follower ends on it), and only where someone may read it: a run that wrote entries, or one a
-- follower marked `followed` (follow-run.lua). A stream of one entry takes about 4.7 KB, four
-- times what the rest of a no-op fan-out child keeps; a follower that comes after the end learns
-- of it from the run's status. A fan-out child's end is not published: its parent hears of it through
-- recordChildEnd, and thousands of children would flood every subscriber (a `result()` of a
-- child still resolves, by its periodic check).
-- The runs index forgets the run when its keys expire: trim-runs.lua drops the ids whose time in
-- the expiries set has passed.
-- keys: the run's keys (runKeys in redis-keys.ts); o: { retention, channel, changes, runs, expiries }
local function finish(keys, runId, status, now, o)
  redis.call('HSET', keys[1], 'status', status, 'finishedAt', now, 'updatedAt', now)
  if redis.call('EXISTS', keys[8]) == 1 or redis.call('HEXISTS', keys[1], 'followed') == 1 then
    redis.call('XADD', keys[8], '*', 'end', status)
  end
  compactHash(keys[1])
  local child = redis.call('HEXISTS', keys[1], 'parentId') == 1
  local ttl = tonumber(o.retention)
  if ttl and ttl > 0 then
    for _, key in ipairs(keys) do redis.call('EXPIRE', key, ttl) end
    redis.call('EXPIRE', keys[1] .. ':events', ttl) -- the run's event log (logEvent)
    local idempotencyKey = redis.call('HGET', keys[1], 'idempotencyKey')
    if idempotencyKey then redis.call('EXPIRE', idempotencyKey, ttl) end
    local inputs = redis.call('HGET', keys[4], 'inputs') -- the staged inputs of its fan-out, if any
    if inputs then redis.call('EXPIRE', inputs, ttl) end
    releaseValues(keys[1], runId, tonumber(now) + ttl * 1000, now, o)
    if not child then
      redis.call('ZADD', o.expiries, string.format('%d', tonumber(now) + ttl * 1000), runId)
      -- A few ids of runs expired by now leave the index with each end: it never outgrows its runs.
      local gone = redis.call('ZRANGEBYSCORE', o.expiries, '-inf', now, 'LIMIT', 0, 10)
      if #gone > 0 then
        redis.call('ZREM', o.runs, unpack(gone))
        redis.call('ZREM', o.expiries, unpack(gone))
      end
    end
  end
  if not child then
    redis.call('PUBLISH', o.channel, cjson.encode({ type = 'ended', runId = runId, status = status }))
  end
  changed(keys[1], runId, o)
end

-- Appends a step's history record, keeping the newest `maxRecords`.
local function pushRecord(historyKey, record, maxRecords)
  if type(record) ~= 'string' then return end
  redis.call('RPUSH', historyKey, record)
  redis.call('LTRIM', historyKey, -tonumber(maxRecords), -1)
end

--[[
  Records how child `index` of a waiting parent ended (once per index) and says what the parent
  does next.
  keys: the parent's keys (runKeys in redis-keys.ts)
  c: { parentId, parentStep, index, outcome (JSON), ok ('1'|'0'), failFast ('1'|'0'),
       parentError (JSON, used when the parent fails fast), errorRecord (JSON or ''),
       values (hashes the outcome references, claimed for the parent; stored already, or staged
       as c.staged: hash -> staging key, see stagedValues),
       take (true: the caller runs the next child itself; see ChildEndReport.take),
       now, channel, changes, retention, maxErrors, valuePrefix, valuesSuffix,
       cascades (RedisKeys.cascades: the parent joins it when it fails fast) }
  Returns { code, first, count }:
    0 ignored: the parent no longer waits on this fan-out
    1 recorded; start the `count` children from index `first` now (count 0: none)
    2 the parent ended here (it failed fast): cancel the siblings
    3 recorded, and it was the last child: enqueue the parent's fan-in step
    4 recorded before (a redelivery): nothing new
  Children start as ends make room in the fan-out's `window` (children in flight), `refill` of
  them at a time (or all those left; one at least when `c.take`); a fan-out stored without them
  starts one per end.
]]
local function recordChildEnd(keys, c)
  local runKey, fanOutKey = keys[1], keys[4]
  if redis.call('HGET', runKey, 'status') ~= 'waiting' or redis.call('HGET', fanOutKey, 'step') ~= c.parentStep then
    return { 0, -1, 0 }
  end
  if redis.call('HSETNX', keys[5], c.index, c.outcome) == 0 then
    local total = tonumber(redis.call('HGET', fanOutKey, 'total'))
    local ended = tonumber(redis.call('HGET', fanOutKey, 'ended'))
    if ended >= total then return { 3, -1, 0 } end
    return { 4, -1, 0 }
  end
  -- The values the outcome's patch references (c.staged: copies from the child's partition).
  claimValues(runKey, c.parentId, c.values, c.staged or {}, c)
  if c.ok == '1' then
    -- A completed item's input is read no more (a retry runs again only what did not complete):
    -- it goes now, so a large fan-out holds the inputs of the items still to do, not of all.
    local fanOut = redis.call('HMGET', fanOutKey, 'kind', 'inputs')
    if fanOut[1] == 'items' and fanOut[2] then redis.call('HDEL', fanOut[2], c.index) end
  end
  if c.errorRecord ~= '' then
    redis.call('RPUSH', keys[2], c.errorRecord)
    redis.call('LTRIM', keys[2], -tonumber(c.maxErrors), -1)
  end
  local ended = redis.call('HINCRBY', fanOutKey, 'ended', 1)
  redis.call('HSET', runKey, 'updatedAt', c.now)
  if c.ok ~= '1' then
    redis.call('HINCRBY', fanOutKey, 'failed', 1)
    if c.failFast == '1' then
      redis.call('HSET', runKey, 'error', c.parentError)
      finish(keys, c.parentId, 'failed', c.now, c)
      -- The caller cancels the siblings; should it die first, a worker's heartbeat does.
      redis.call('ZADD', c.cascades, 'NX', c.now, c.parentId)
      return { 2, -1, 0 }
    end
  end
  local fanOut = redis.call('HMGET', fanOutKey, 'total', 'started', 'window', 'refill')
  local total, started = tonumber(fanOut[1]), tonumber(fanOut[2])
  -- Live views hear of every end of a fan-out of up to 199 children, and of every floor(total / 100)-th
  -- of a larger one (about every 1 %; the last by the fan-in): thousands of ends would flood every
  -- subscriber.
  if ended % math.max(1, math.floor(total / 100)) == 0 then changed(runKey, c.parentId, c) end
  if ended >= total then return { 3, -1, 0 } end
  local left = total - started
  local room, refill = math.min(left, 1), 1
  if fanOut[3] then room, refill = math.min(left, tonumber(fanOut[3]) - (started - ended)), tonumber(fanOut[4]) end
  -- A caller that runs the next child itself (c.take) starts one as soon as there is room.
  local enough = math.min(refill, left)
  if c.take then enough = 1 end
  if left > 0 and room >= enough then
    redis.call('HINCRBY', fanOutKey, 'started', room)
    return { 1, started, room }
  end
  return { 1, -1, 0 }
end

--[[
  Makes the record of child `index` of a waiting parent's fan-out as it starts, from its staged
  input `checkpoint` (a delta against the parent's snapshot; nil: none staged, nothing made):
  running (its parent started it), with the parent's priority. A record that exists (a
  redelivery) is left as it is. Returns its fields as a flat list (what HGETALL would give), or
  false when nothing was made. The child may live in another partition than its parent
  (Partitions.indexOf): then its parent's script read the input and this one runs in the child's
  partition (place-children.lua).
  fanOut: { flow, fingerprint, childTarget } of the fan-out; priority: the parent's or nil
  c: { runPrefix (of the child's partition), parentId, parentStep, now }
]]
local function makeChild(fanOut, priority, c, index, checkpoint)
  local childKey = c.runPrefix .. c.parentId .. '.' .. c.parentStep .. '.' .. index
  if not checkpoint or redis.call('EXISTS', childKey) == 1 then return false end
  local fields = { 'flow', fanOut[1], 'fingerprint', fanOut[2], 'status', 'running', 'step', 0, 'attempt', 0,
    'createdAt', c.now, 'startedAt', c.now, 'updatedAt', c.now, 'parentId', c.parentId,
    'parentStep', c.parentStep, 'childIndex', index, 'target', fanOut[3], 'checkpoint', checkpoint }
  if priority then
    table.insert(fields, 'priority')
    table.insert(fields, priority)
  end
  redis.call('HSET', childKey, unpack(fields))
  return fields
end

-- Makes child `index` (makeChild) into `created` ({ index, fields } each). With c.takenKey (a
-- worker's taken tasks, ChildEndReport.take), the first child made joins it as its first step's
-- task id `<child id>-0`: the worker runs it itself.
local function addChild(created, fanOut, priority, c, index, checkpoint)
  local fields = makeChild(fanOut, priority, c, index, checkpoint)
  if not fields then return end
  if type(c.takenKey) == 'string' and #created == 0 then
    redis.call('SADD', c.takenKey, c.parentId .. '.' .. c.parentStep .. '.' .. index .. '-0')
  end
  table.insert(created, { index, fields })
end

--[[
  What the partitions of fan-out children other than their parent's need to make their records
  (place-children.lua there), read here in the parent's: the fan-out's basics, the parent's
  priority, and each child's staged input. A placement under way is recorded (RedisKeys.placements)
  until the placer has checked that the parent still waits (a worker looks at one left behind).
  fanOut: { flow, fingerprint, childTarget }; priority: the parent's or nil
  c: { placements, placement (its member), now }
  Returns { flow, fingerprint, childTarget, priority ('' none), inputs (index, input pairs) }.
]]
local function giveChildren(fanOut, priority, inputsKey, indices, c)
  local inputs = {}
  for _, index in ipairs(indices) do
    local input = redis.call('HGET', inputsKey, index)
    if input then
      table.insert(inputs, index)
      table.insert(inputs, input)
    end
  end
  if #inputs > 0 then redis.call('ZADD', c.placements, c.now, c.placement) end
  return { fanOut[1], fanOut[2], fanOut[3], priority or '', inputs }
end

-- A message reached `address`: when it is an agent's inbox, the address joins the partition's
-- due inboxes (RedisKeys.agentsDue, `<prefix>:agents:due` beside `<prefix>:mailbox:`), so that a
-- worker starts the agent's turn should the process that delivered it die before it does.
local function markAgentDue(mailboxPrefix, address, now)
  if string.sub(address, 1, 6) ~= 'agent:' then return end
  redis.call('ZADD', string.sub(mailboxPrefix, 1, -9) .. 'agents:due', 'NX', tonumber(now) or 0, address)
end

-- Mailboxes: `m` holds the key prefixes redis-keys.ts builds ({ mailboxPrefix, waitersPrefix }),
-- to which an address is appended; they share the run's hash tag when the address lies in the
-- run's partition.
local function mailboxKey(m, address) return m.mailboxPrefix .. address end
local function waitersKey(m, address) return m.waitersPrefix .. address end

--[[
  Partitions (partitions.ts, README "Scaling out"): a mailbox lives in the partition of its
  address, CRC16 of the address's bytes mod 16384 mod the count; a run in that of its id
  (Partitions.indexOf: a root's slot, a fan-out child's some places further).
  What a run's transition does to a mailbox of another partition cannot be done in this script
  (a cluster refuses keys of another slot): it is handed off. The transition appends the hand-off
  to the run's hand-off list (`<run key>:handoffs`, JSON, in order) and the run to its
  partition's pending set (m.handoffs: run id -> when); the caller then applies the list in the
  mailbox's partition (apply-handoffs.lua), each hand-off idempotent, and drops what it applied. A
  crash in between leaves them pending: a worker's heartbeat applies what waits longer than a few
  seconds, and the run's next hand-off applies its older ones first, so a run's messages to an
  address keep their order. m: { partition, partitions, handoffs, now }
]]
local CRC16
local function crc16(text)
  if not CRC16 then
    CRC16 = {}
    for i = 0, 255 do
      local crc = bit.lshift(i, 8)
      for _ = 1, 8 do
        if bit.band(crc, 0x8000) ~= 0 then crc = bit.band(bit.bxor(bit.lshift(crc, 1), 0x1021), 0xffff)
        else crc = bit.band(bit.lshift(crc, 1), 0xffff) end
      end
      CRC16[i] = crc
    end
  end
  local crc = 0
  for i = 1, #text do
    crc = bit.bxor(bit.band(bit.lshift(crc, 8), 0xffff), CRC16[bit.band(bit.bxor(bit.rshift(crc, 8), string.byte(text, i)), 0xff)])
  end
  return crc
end

-- Whether mailbox `address` lies in the partition of the run this script works on.
local function isLocal(m, address)
  local count = tonumber(m.partitions)
  if not count or count <= 1 then return true end
  return (crc16(address) % 16384) % count == tonumber(m.partition)
end

-- Among a transition's wakes (m.wakes), this mark tells the caller it handed something off (no
-- task id starts with '@'); the caller takes it out and applies the run's hand-offs.
local HANDED_OFF = '@handoffs'

-- Hands `effect` off to the partition of its address (t: kind, a: address, ...; see apply-handoffs.lua).
local function handOff(m, runKey, runId, effect)
  if type(m.wakes) == 'table' and not m.handedOff then
    m.handedOff = true
    table.insert(m.wakes, HANDED_OFF)
  end
  effect.r = runId
  effect.i = runId .. ':' .. redis.call('HINCRBY', runKey, 'handoffs', 1)
  redis.call('RPUSH', runKey .. ':handoffs', cjson.encode(effect))
  redis.call('ZADD', m.handoffs, 'NX', m.now, runId)
end

-- A message came to `address`: one run parked there leaves its waiters, its wake id into `wakes`
-- (one message wakes one run; should that run not get it, it parks again and a later message or
-- a message still waiting at its park wakes it).
local function collectWaiters(m, address, wakes)
  local jobId = redis.call('SPOP', waitersKey(m, address))
  if jobId then table.insert(wakes, jobId) end
end

-- Appends a message to a mailbox. A mailbox nobody touches for the retention period expires
-- (a late answer to an `ask` that timed out does not stay forever).
local function pushMessage(m, address, message, retention)
  local key = mailboxKey(m, address)
  redis.call('RPUSH', key, message)
  local ttl = tonumber(retention)
  if ttl and ttl > 0 then redis.call('EXPIRE', key, ttl) end
  markAgentDue(m.mailboxPrefix, address, m.now)
end

-- Delivers the outbox of run `runKey`: a list of { address, message JSON } pairs.
local function deliverOutbox(m, outbox, wakes, retention, runKey)
  for _, sent in ipairs(outbox or {}) do
    if isLocal(m, sent[1]) then
      pushMessage(m, sent[1], sent[2], retention)
      collectWaiters(m, sent[1], wakes)
    else
      handOff(m, runKey, m.runId, { t = 'send', a = sent[1], m = sent[2] })
    end
  end
end

--[[
  Wait-for edges (ParkRequest.ask): a turn parked on the answer to its ask is an edge from its
  agent to the agent asked, kept in the run's partition (RedisKeys.agentsAsking, beside
  `<prefix>:mailbox:`: agent -> JSON { t asked, r run id, w wake id, a reply address, at when })
  while that park lasts. A cycle through several partitions is found by a worker's sweep
  (RedisRunStore.failWaitCycles). An edge counts while its run is parked there and no answer waits at its reply
  address (one in another partition is not looked at).
]]
local function asksKey(m) return string.sub(m.mailboxPrefix, 1, -9) .. 'agents:asking' end

local function stillAsking(m, edge)
  local step, parks = string.match(edge.w, '%-(%d+)%-p(%d+)$')
  local run = redis.call('HMGET', m.runPrefix .. edge.r, 'status', 'step', 'parkCount')
  if run[1] ~= 'waiting' or run[2] ~= step or run[3] ~= parks then return false end
  return not isLocal(m, edge.a) or redis.call('LLEN', mailboxKey(m, edge.a)) == 0
end

-- The wait cycle `ask` ({ from, to }) would close: the chain of edges from the agent asked back
-- to the asker, each waiting for the next one's answer (the agent asked first and last); nil when
-- there is none among this partition's edges.
local function askCycle(m, ask)
  local chain, seen, at = { ask.to }, { [ask.to] = true }, ask.to
  while at ~= ask.from do
    local encoded = redis.call('HGET', asksKey(m), at)
    if not encoded then return nil end
    local edge = cjson.decode(encoded)
    if seen[edge.t] or not stillAsking(m, edge) then return nil end
    seen[edge.t] = true
    table.insert(chain, edge.t)
    at = edge.t
  end
  table.insert(chain, ask.to)
  return chain
end

-- The run stops waiting where its step last parked (it commits, parks again, or ends): its wake
-- job leaves that address's waiters, so no set outlives the runs it lists. A receiveAny park
-- leaves several (`n`: pass on): a send to one of them took its wake there only, so a send to
-- another may have taken its wake meant for another run since; where a message waits with runs
-- still parked, one of them is woken (m.wakes), so that no message stays stranded.
local function leaveWaiters(runKey, m, runId)
  local fields = redis.call('HMGET', runKey, 'replay', 'step', 'parkCount')
  if not fields[1] then return end
  local parked = cjson.decode(fields[1]).parked
  if type(parked) ~= 'table' or type(parked.address) ~= 'string' then return end
  local wake = runId .. '-' .. fields[2] .. '-p' .. (fields[3] or '0')
  if type(parked.ask) == 'table' then -- its wait-for edge goes
    local edge = redis.call('HGET', asksKey(m), parked.ask.from)
    if edge and cjson.decode(edge).w == wake then redis.call('HDEL', asksKey(m), parked.ask.from) end
  end
  local addresses = parked.addresses
  local any = type(addresses) == 'table'
  if not any then addresses = { parked.address } end -- a receiveAny's, or a receive's one
  for _, address in ipairs(addresses) do
    if isLocal(m, address) then
      redis.call('SREM', waitersKey(m, address), wake)
      if any and redis.call('LLEN', mailboxKey(m, address)) > 0 then collectWaiters(m, address, m.wakes) end
    else
      handOff(m, runKey, runId, { t = 'unwait', a = address, w = wake, n = any and 1 or nil })
    end
  end
end

-- The run parks on `address` with wake job `wake`; returns 1 when a message waits there already
-- (0 for a mailbox of another partition: the caller learns it as it applies the hand-off).
local function waitOn(m, runKey, runId, address, wake)
  if not isLocal(m, address) then
    handOff(m, runKey, runId, { t = 'wait', a = address, w = wake })
    return 0
  end
  redis.call('SADD', waitersKey(m, address), wake)
  if redis.call('LLEN', mailboxKey(m, address)) > 0 then return 1 end
  return 0
end

-- Direct hand-off (StepDriverOptions.continueSteps): the first run this transition woke is
-- taken by the worker whose step woke it, and recorded in that worker's set of taken wakes
-- (`o.takenKey`; a survivor that takes over a dead worker makes them due); the caller promotes
-- the others. Returns the wake id taken, or false.
local function takeWake(o, wakes)
  if type(o.takenKey) ~= 'string' then return false end
  for i, wake in ipairs(wakes) do
    if wake ~= HANDED_OFF then
      table.remove(wakes, i)
      redis.call('SADD', o.takenKey, wake)
      return wake
    end
  end
  return false
end

-- A wake's reservation (load-run.lua): for a run `status` parked at park count `parkCount` (its
-- `replay`), woken for park `park` (a string; '' not a wake), its parked receive's message is
-- reserved now when its mailbox (in this partition) has one, as reserve-message.lua would when the
-- step runs again (a receiveAny reserves its then). Returns the run's reserved hash, flat, or {}
-- when the run is not parked at that park.
local function reserveWoken(reservedKey, status, parkCount, replay, park, m)
  if park == '' or status ~= 'waiting' or (parkCount or '0') ~= park or not replay then return {} end
  local parked = cjson.decode(replay).parked
  if type(parked) == 'table' and type(parked.addresses) ~= 'table' and isLocal(m, parked.address) then
    local ordinal = string.format('%d', parked.ordinal)
    if redis.call('HEXISTS', reservedKey, 'm' .. ordinal) == 0 then
      local message = redis.call('LPOP', m.mailboxPrefix .. parked.address)
      if message then redis.call('HSET', reservedKey, 'a' .. ordinal, parked.address, 'm' .. ordinal, message) end
    end
  end
  return redis.call('HGETALL', reservedKey)
end

-- The run whose wake `wake` this transition took (takeWake), read for that wake as load-run.lua
-- reads it, so that the taking worker runs the woken step without a round trip: { its hash, its
-- reserved hash } (flat lists), or false: a store of several partitions (the run may live in
-- another), or the run is not parked at that park, or a dead worker's step is noted on it (a load
-- logs that takeover). m: runPrefix, mailboxPrefix, partitions.
local function loadTaken(m, wake)
  local count = tonumber(m.partitions)
  if not wake or (count and count > 1) then return false end
  local runId, park = string.match(wake, '^(.+)%-%d+%-p(%d+)$')
  if not runId then return false end
  local key = m.runPrefix .. runId
  local run = redis.call('HMGET', key, 'status', 'parkCount', 'replay', 'takenFrom')
  if run[1] ~= 'waiting' or (run[2] or '0') ~= park or run[4] then return false end
  return { redis.call('HGETALL', key), reserveWoken(key .. ':reserved', run[1], run[2], run[3], park, m) }
end

-- The run's holds in other partitions end: a hand-off per address of `remote` (a set) consumes
-- ('consume') or gives back ('release') what it holds there in the current epoch, and the next
-- epoch begins.
local function endHolds(m, runKey, remote, kind)
  if not next(remote) then return end
  local epoch = redis.call('HGET', runKey, 'holdEpoch') or '0'
  for address in pairs(remote) do handOff(m, runKey, m.runId, { t = kind, a = address, e = epoch }) end
  redis.call('HINCRBY', runKey, 'holdEpoch', 1)
end

-- A step that will not commit gives its reserved messages back, at the head of their mailboxes
-- and in their order. The reserved hash holds a<ordinal> = address, m<ordinal> = message, and
-- r<ordinal> = address for a message held in another partition (hold-message.lua), which a
-- hand-off gives back there. Holds are counted in epochs (`holdEpoch` on the run): those of one
-- epoch end together, given back or consumed, and a hold of an ended epoch takes nothing.
local function releaseReserved(reservedKey, m, wakes, runKey)
  local fields = redis.call('HGETALL', reservedKey)
  local ordinals, addresses, messages = {}, {}, {}
  local remote = {}
  for i = 1, #fields, 2 do
    local kind, ordinal = string.sub(fields[i], 1, 1), tonumber(string.sub(fields[i], 2))
    if kind == 'a' then addresses[ordinal] = fields[i + 1]; table.insert(ordinals, ordinal) end
    if kind == 'm' then messages[ordinal] = fields[i + 1] end
    if kind == 'r' then remote[fields[i + 1]] = true end
  end
  table.sort(ordinals, function(x, y) return x > y end)
  for _, ordinal in ipairs(ordinals) do
    redis.call('LPUSH', mailboxKey(m, addresses[ordinal]), messages[ordinal])
    collectWaiters(m, addresses[ordinal], wakes)
  end
  endHolds(m, runKey, remote, 'release')
  redis.call('DEL', reservedKey)
end

-- The step commits: the messages it reserved are consumed (those held in another partition are
-- dropped there by a hand-off).
local function consumeReserved(reservedKey, m, runKey)
  local fields = redis.call('HGETALL', reservedKey)
  local remote = {}
  for i = 1, #fields, 2 do
    if string.sub(fields[i], 1, 1) == 'r' then remote[fields[i + 1]] = true end
  end
  endHolds(m, runKey, remote, 'consume')
  redis.call('DEL', reservedKey)
end

--[[
  The run's event log (RedisKeys.runEvents, `<run key>:events`; kernel/run-event.ts in the
  runtime): a list of JSON entries { at, step, kind, ... }, the newest MAX_RUN_EVENTS, for the
  rare transitions alone (committed steps are in the step history); each written by the script of
  the transition it records, kept and expired with the run's other keys (finish, reopen-run.lua).
]]
local MAX_RUN_EVENTS = 200

-- Appends `event` (a table, or its JSON text) to the run's event log.
local function logEvent(runKey, event)
  if type(event) == 'table' then event = cjson.encode(event) end
  local key = runKey .. ':events'
  redis.call('RPUSH', key, event)
  redis.call('LTRIM', key, -MAX_RUN_EVENTS, -1)
end

-- The run's step goes on after its last park (it commits, fans out, fails, or parks on a later
-- call): logs `woken` once per park (the run's `woke` field holds the park count logged), with
-- the message reserved for the parked receive (a message held in another partition: its address
-- alone), or none: the receive timed out. Called only for a step that parked (the caller's run
-- has `replay.parked`), so a step that never parked pays nothing.
local function logWoken(runKey, reservedKey, now)
  local at = redis.call('HMGET', runKey, 'replay', 'parkCount', 'woke', 'step')
  if not at[1] then return end
  local parked = cjson.decode(at[1]).parked
  local parks = at[2] or '0'
  if type(parked) ~= 'table' or at[3] == parks then return end
  redis.call('HSET', runKey, 'woke', parks)
  local event = { at = tonumber(now), step = tonumber(at[4]), kind = 'woken' }
  if parked.room then
    event.address = parked.address
  else
    local ordinal = string.format('%d', parked.ordinal)
    local held = redis.call('HMGET', reservedKey, 'a' .. ordinal, 'm' .. ordinal, 'r' .. ordinal)
    if held[2] then
      local ok, message = pcall(cjson.decode, held[2])
      event.address = held[1] or parked.address
      if ok and type(message) == 'table' then event.messageId = message.id end
    elseif held[3] then
      event.address = held[3]
    else
      event.timedOut = true
    end
  end
  logEvent(runKey, event)
end
