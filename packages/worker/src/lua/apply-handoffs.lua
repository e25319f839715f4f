--[[
  Applies, in the partition of their mailboxes, hand-offs a run's transitions recorded in the
  run's partition (handOff in run-lifecycle.lua), in order; each may be applied again (after a
  crash before the caller dropped it) and then does nothing more:
    send     { a, m, i }  a message to address a: appended (once: a marker per hand-off id i,
                          kept a day), and a run parked there is woken
    wait     { a, w }     wake job w joins the waiters of address a (ready when a message waits)
    unwait   { a, w }     wake job w leaves them
    consume  { a, e, i }  the run's messages held at address a in epoch e are consumed
    release  { a, e, i }  ... given back, at the head of the mailbox and in their order
  A consume or a release marks the epoch done (hold-message.lua then holds nothing for it).

  KEYS[1] a key of the mailboxes' partition (the first hand-off's mailbox list), for routing
  ARGV[1] options JSON { mailboxPrefix, waitersPrefix, heldPrefix, sentPrefix, retention }
  ARGV[2] the hand-offs, JSON array, each with the run id `r` its transition came from

  Returns { wakes, ready }: wake ids of runs parked on the addresses a message came to, and the
  wake ids of `wait` hand-offs whose address has a message waiting already
]]
local o = cjson.decode(ARGV[1])
local wakes, ready = {}, {}
for _, h in ipairs(cjson.decode(ARGV[2])) do
  if h.t == 'send' then
    if redis.call('SET', o.sentPrefix .. h.i, 1, 'NX', 'EX', 86400) then
      pushMessage(o, h.a, h.m, o.retention)
      collectWaiters(o, h.a, wakes)
    end
  elseif h.t == 'wait' then
    redis.call('SADD', waitersKey(o, h.a), h.w)
    if redis.call('LLEN', mailboxKey(o, h.a)) > 0 then table.insert(ready, h.w) end
  elseif h.t == 'unwait' then
    redis.call('SREM', waitersKey(o, h.a), h.w)
  else
    local heldKey = o.heldPrefix .. h.r
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
return { wakes, ready }
