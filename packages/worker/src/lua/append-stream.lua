--[[
  Appends the entries one try of a step wrote (`this.emit`) to the run's stream, in order, capped
  at about `maxLen` entries (XADD MAXLEN ~: whole nodes of the oldest go). Nothing is written for
  a run that has ended (its end marker stays the last entry) or does not exist.

  The attempt: entries carry the try's attempt. A try that wrote before (its `token` is known)
  keeps the attempt it got then. A new one gets the attempt above the highest of the step's
  earlier writers when that is at or above its own (a try cut short by a crash, whose job BullMQ
  ran again without counting a try), so that every try of a step that writes entries has an
  attempt of its own.

  A restart: when the step's latest writer has not ended (no transition of the step since it
  wrote, see endStreamTry in run-lifecycle.lua: its worker died or lost the step), a new try's
  entries follow one restart entry (`r`: JSON { attempt, stoppedWorker, worker }, data null) that
  names the cut try's attempt and worker and this try's worker; with no entries (a try that
  starts: StepDriver), the restart entry alone. The run hash's `streamTry` field keeps the step's
  writers (streamTryOf in run-lifecycle.lua), at most MAX_TRIES of them. Without a token (a
  fan-out item) the attempt stays as given and nothing is recorded.

  KEYS[1] run hash   KEYS[2] run stream

  ARGV[1] options, JSON: step, attempt, token (optional), item (optional), maxLen; with a token,
          worker, node and at (epoch ms): the restart entry's worker, node and time
  ARGV[2..] the entries, three values each: node, time (epoch ms), data (JSON)

  Returns { code, attempt, ids }:
    code 1 appended: `attempt` the entries got, `ids` their stream ids in order (a restart
           entry's first, when one was written)
         0 the run has ended: nothing written
        -1 no such run
]]
local MAX_TRIES = 16
local o = cjson.decode(ARGV[1])
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return { -1, 0, {} } end
if isFinal(status) then return { 0, 0, {} } end
local step = tostring(o.step)
local attempt = tonumber(o.attempt)
local ids = {}
local function add(fields)
  ids[#ids + 1] = redis.call('XADD', KEYS[2], 'MAXLEN', '~', o.maxLen, '*', unpack(fields))
end
if type(o.token) == 'string' then
  local record = streamTryOf(KEYS[1])
  if not record or record.step ~= step then record = { step = step, tries = {}, ended = false } end
  local known, highest = nil, nil
  for _, try in ipairs(record.tries) do
    if try.t == o.token then known = try end
    if highest == nil or try.a > highest then highest = try.a end
  end
  if known then
    attempt = known.a
  else
    if highest ~= nil and highest >= attempt then attempt = highest + 1 end
    local latest = record.tries[#record.tries]
    if latest and not record.ended then
      local restart = cjson.encode({ attempt = latest.a, stoppedWorker = latest.w, worker = o.worker or '' })
      local node, at = o.node, o.at
      if node == nil then node = ARGV[2] or '' end
      if at == nil then at = ARGV[3] or '0' end
      add({ 's', step, 'a', attempt, 'n', node, 't', at, 'd', 'null', 'r', restart })
    end
    record.tries[#record.tries + 1] = { t = o.token, a = attempt, w = o.worker or '' }
    if #record.tries > MAX_TRIES then table.remove(record.tries, 1) end
    record.ended = false
    redis.call('HSET', KEYS[1], 'streamTry', cjson.encode(record))
  end
end
for i = 2, #ARGV, 3 do
  local fields = { 's', step, 'a', attempt, 'n', ARGV[i], 't', ARGV[i + 1], 'd', ARGV[i + 2] }
  if o.item ~= nil then
    fields[#fields + 1] = 'i'
    fields[#fields + 1] = tostring(o.item)
  end
  add(fields)
end
return { 1, attempt, ids }
