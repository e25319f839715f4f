--[[
  Reserves a message for receive call `ordinal` of a run's current step: the one reserved for it
  before (the step runs again after a park or a crash: same message, same id), else the head of
  the mailbox. A reserved message is consumed when the step commits, or given back when the run
  fails or is cancelled (commit-step.lua, cancel-run.lua).

  A mailbox of another partition (ARGV[4] 'remote') cannot be popped here: the reservation is
  recorded (r<ordinal> = address) and the caller holds the message in the mailbox's partition
  (hold-message.lua) under the run's hold epoch, which this returns; a commit consumes it there
  and a failure or a cancel gives it back (releaseReserved, consumeReserved: by hand-offs).

  A `receiveAny` asks its addresses one at a time with the same ordinal: whatever was reserved
  for the ordinal before comes back with its own address, whichever address is asked, so one
  message at most is ever reserved for it. A remote reservation whose hold found its mailbox empty
  is dropped (ARGV[4] 'forget') before the next address is asked.

  KEYS[1] run hash   KEYS[2] run reserved-messages hash
  KEYS[3] mailbox list (for a mailbox of another partition: KEYS[2] again)
  ARGV[1] the step counter of the step, then ':' and its park count (see atStep)
  ARGV[2] receive call ordinal   ARGV[3] address   ARGV[4] 'remote', 'forget' or ''

  Returns: { 1, message JSON, address } reserved; { 0 } the mailbox is empty (or forgotten);
           { 2, hold epoch, address } (remote) hold it in that address's partition;
           { -1 } the run has ended or moved past this step (a stale delivery): reserve nothing
]]
local status = redis.call('HGET', KEYS[1], 'status')
local expectedStep, expectedParks = string.match(ARGV[1], '^(%d+):(%d+)$')
if not status or isFinal(status) or not atStep(KEYS[1], expectedStep, expectedParks) then return { -1 } end
local ordinal = ARGV[2]
if ARGV[4] == 'forget' then
  if redis.call('HGET', KEYS[2], 'r' .. ordinal) == ARGV[3] then redis.call('HDEL', KEYS[2], 'r' .. ordinal) end
  return { 0 }
end
local held = redis.call('HMGET', KEYS[2], 'm' .. ordinal, 'a' .. ordinal, 'r' .. ordinal)
if held[1] then return { 1, held[1], held[2] or ARGV[3] } end
local epoch = redis.call('HGET', KEYS[1], 'holdEpoch') or '0'
if held[3] then return { 2, epoch, held[3] } end
if ARGV[4] == 'remote' then
  redis.call('HSET', KEYS[2], 'r' .. ordinal, ARGV[3])
  return { 2, epoch, ARGV[3] }
end
local message = redis.call('LPOP', KEYS[3])
if not message then return { 0 } end
redis.call('HSET', KEYS[2], 'a' .. ordinal, ARGV[3], 'm' .. ordinal, message)
return { 1, message, ARGV[3] }
