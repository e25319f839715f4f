--[[
  Appends the entries one try of a step wrote (`this.emit`) to the run's stream, in order, capped
  at about `maxLen` entries (XADD MAXLEN ~: whole nodes of the oldest go). Nothing is written for
  a run that has ended (its end marker stays the last entry) or does not exist.

  The attempt: entries carry the try's attempt, but when another try of the same step (another
  `token`) wrote entries before with an attempt at or above it (a try cut short by a crash, whose
  job BullMQ ran again without counting a try), they get the attempt above it, so that every try
  of a step that writes entries has an attempt of its own. The run hash's `streamTry` field keeps
  `<step>:<token>:<attempt>` of the last writer. Without a token (a fan-out item) the attempt
  stays as given.

  KEYS[1] run hash   KEYS[2] run stream

  ARGV[1] options, JSON: step, attempt, token (optional), item (optional), maxLen
  ARGV[2..] the entries, three values each: node, time (epoch ms), data (JSON)

  Returns { code, attempt, ids }:
    code 1 appended: `attempt` the entries got, `ids` their stream ids in order
         0 the run has ended: nothing written
        -1 no such run
]]
local o = cjson.decode(ARGV[1])
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return { -1, 0, {} } end
if isFinal(status) then return { 0, 0, {} } end
local step = tostring(o.step)
local attempt = tonumber(o.attempt)
if type(o.token) == 'string' then
  local last = redis.call('HGET', KEYS[1], 'streamTry')
  if last then
    local lastStep, lastToken, lastAttempt = string.match(last, '^([^:]*):([^:]*):(%d+)$')
    if lastStep == step then
      if lastToken == o.token then
        attempt = tonumber(lastAttempt)
      elseif tonumber(lastAttempt) >= attempt then
        attempt = tonumber(lastAttempt) + 1
      end
    end
  end
  redis.call('HSET', KEYS[1], 'streamTry', step .. ':' .. o.token .. ':' .. attempt)
end
local ids = {}
for i = 2, #ARGV, 3 do
  local fields = { 's', step, 'a', attempt, 'n', ARGV[i], 't', ARGV[i + 1], 'd', ARGV[i + 2] }
  if o.item ~= nil then
    fields[#fields + 1] = 'i'
    fields[#fields + 1] = tostring(o.item)
  end
  ids[#ids + 1] = redis.call('XADD', KEYS[2], 'MAXLEN', '~', o.maxLen, '*', unpack(fields))
end
return { 1, attempt, ids }
