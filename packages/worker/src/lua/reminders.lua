--[[
  Reminders of keyed agents (reminders.ts, README "Agents"), by ARGV[1]. They live in the
  partition of the agent's address, beside its inbox:

  KEYS[1] the partition's due reminders (sorted set: '<name> <address>' -> due, epoch ms)

  change  KEYS[2] the agent's reminders (hash: 'spec:<name>' -> JSON { due, every?, missed },
          'body:<name>' -> the body's JSON text, kept as text so that no number is re-encoded)
          ARGV[2] the address   ARGV[3] the changes, JSON [ { name, cancel } | { name, due, every?,
          missed, body (JSON text) } ], applied in order. Returns 1.
  fire    ARGV[2] options JSON { now, limit, graceMs, mailboxPrefix, reminderPrefix, retention }:
          the reminders due at `now`, earliest first, `limit` at most. Each delivers its message to
          its agent's inbox (marked due, as any message to an agent) unless it is a missed tick
          under 'skip' (see fireReminder in reminders.ts, which this mirrors), then is dropped or,
          repeating, due at its first tick after `now`.
          Returns { addresses delivered to, the earliest due time left or false }.
]]
local op = ARGV[1]
if op == 'change' then
  local ref = ARGV[2]
  for _, change in ipairs(cjson.decode(ARGV[3])) do
    local member = change.name .. ' ' .. ref
    if change.cancel then
      redis.call('HDEL', KEYS[2], 'spec:' .. change.name, 'body:' .. change.name)
      redis.call('ZREM', KEYS[1], member)
    else
      local spec = { due = change.due, every = change.every, missed = change.missed }
      redis.call('HSET', KEYS[2], 'spec:' .. change.name, cjson.encode(spec), 'body:' .. change.name, change.body)
      redis.call('ZADD', KEYS[1], change.due, member)
    end
  end
  return 1
end
if op == 'fire' then
  local o = cjson.decode(ARGV[2])
  local now = tonumber(o.now)
  local delivered = {}
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, o.limit)) do
    local space = string.find(member, ' ', 1, true)
    local name, ref = string.sub(member, 1, space - 1), string.sub(member, space + 1)
    local hash = o.reminderPrefix .. ref
    local fields = redis.call('HMGET', hash, 'spec:' .. name, 'body:' .. name)
    if not fields[1] then
      redis.call('ZREM', KEYS[1], member) -- its agent was deleted
    else
      local spec = cjson.decode(fields[1])
      local late = now - spec.due
      local deliver, next
      if type(spec.every) == 'number' then
        local ticks = math.floor(late / spec.every) + 1
        next = spec.due + ticks * spec.every
        deliver = ticks == 1 or spec.missed == 'once'
      else
        deliver = late < o.graceMs or spec.missed == 'once'
      end
      if deliver then
        local id = string.format('r.%s.%d', name, spec.due)
        local message = '{"id":' .. cjson.encode(id) .. ',"body":' .. fields[2] .. ',"sentAt":' ..
          string.format('%d', now) .. ',"reminder":' .. cjson.encode(name) .. '}'
        pushMessage(o, ref, message, o.retention)
        table.insert(delivered, ref)
      end
      if next then
        spec.due = next
        redis.call('HSET', hash, 'spec:' .. name, cjson.encode(spec))
        redis.call('ZADD', KEYS[1], next, member)
      else
        redis.call('HDEL', hash, 'spec:' .. name, 'body:' .. name)
        redis.call('ZREM', KEYS[1], member)
      end
    end
  end
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return { delivered, first[2] or false }
end
return redis.error_reply('reminders: unknown op ' .. tostring(op))
