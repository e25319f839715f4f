--[[
  Applies, in the partition of their mailboxes, hand-offs a run's transitions recorded in the
  run's partition (handOff in run-lifecycle.lua), in order. Each is applied once: a hand-off's id
  is `<run id>:<n>`, n counting the run's hand-offs, and this partition keeps the highest n it
  applied of each run (`<seqPrefix><run id>`, kept for the retention); one at or below it (a
  caller that read the list before another applied it) is skipped.
    send     { a, m }  a message to address a: appended, and a run parked there is woken
    wait     { a, w }  wake job w joins the waiters of address a (ready when a message waits)
    unwait   { a, w, n }  wake job w leaves them; `n` (a receiveAny's park): a run still parked
                       there is woken when a message waits (see leaveWaiters)
    consume  { a, e }  the run's messages held at address a in epoch e are consumed
    release  { a, e }  ... given back, at the head of the mailbox and in their order
  A consume or a release marks the epoch done at that address (hold-message.lua then holds
  nothing for it).

  KEYS[1] a key of the mailboxes' partition (the first hand-off's mailbox list), for routing
  ARGV[1] options JSON { mailboxPrefix, waitersPrefix, heldPrefix, seqPrefix, retention }
  ARGV[2] the hand-offs, JSON array, each with the run id `r` its transition came from

  Returns { wakes, ready }: wake ids of runs parked on the addresses a message came to, and the
  wake ids of `wait` hand-offs whose address has a message waiting already
]]
local o = cjson.decode(ARGV[1])
local wakes, ready = {}, {}
for _, h in ipairs(cjson.decode(ARGV[2])) do
  local seqKey = o.seqPrefix .. h.r
  local seq = tonumber(string.match(h.i, ':(%d+)$'))
  if seq <= tonumber(redis.call('GET', seqKey) or '0') then
    -- applied already
  else
  redis.call('SET', seqKey, seq, 'EX', o.retention)
  if h.t == 'send' then
    pushMessage(o, h.a, h.m, o.retention)
    collectWaiters(o, h.a, wakes)
  elseif h.t == 'wait' then
    redis.call('SADD', waitersKey(o, h.a), h.w)
    if redis.call('LLEN', mailboxKey(o, h.a)) > 0 then table.insert(ready, h.w) end
  elseif h.t == 'unwait' then
    redis.call('SREM', waitersKey(o, h.a), h.w)
    if h.n and redis.call('LLEN', mailboxKey(o, h.a)) > 0 then collectWaiters(o, h.a, wakes) end
  else
    local heldKey = o.heldPrefix .. h.r .. ':' .. h.a
    local prefix = h.e .. ':'
    local fields = redis.call('HGETALL', heldKey)
    local ordinals, messages = {}, {}
    for i = 1, #fields, 2 do
      local ordinal = string.match(fields[i], '^' .. h.e .. ':(%d+)$')
      if ordinal then
        table.insert(ordinals, tonumber(ordinal))
        messages[tonumber(ordinal)] = fields[i + 1]
      end
    end
    table.sort(ordinals, function(x, y) return x > y end)
    for _, ordinal in ipairs(ordinals) do
      if h.t == 'release' then
        redis.call('LPUSH', mailboxKey(o, h.a), messages[ordinal])
        collectWaiters(o, h.a, wakes)
      end
      redis.call('HDEL', heldKey, prefix .. ordinal)
    end
    redis.call('HSET', heldKey, prefix .. 'done', 1)
    redis.call('EXPIRE', heldKey, o.retention)
  end
  end
end
return { wakes, ready }
