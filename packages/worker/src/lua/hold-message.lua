--[[
  Holds a message of a mailbox for a run of another partition (reserve-message.lua recorded the
  reservation there first): the one held for this receive before (the step runs again after a
  park or a crash: same message), else the head of the mailbox. Held messages end by epoch, with
  a hand-off (apply-handoffs.lua: consume or release) that marks the epoch done; a hold of a done
  epoch (a step that moved on meanwhile) takes nothing.

  KEYS[1] the run's held hash of this address, in the mailbox's partition (`<epoch>:<ordinal>` ->
          message JSON, `<epoch>:done` -> 1)
  KEYS[2] mailbox list
  ARGV[1] hold epoch   ARGV[2] receive call ordinal   ARGV[3] retention (seconds)

  Returns: the message JSON, or false when the mailbox is empty or the epoch is done
]]
local field = ARGV[1] .. ':' .. ARGV[2]
local held = redis.call('HGET', KEYS[1], field)
if held then return held end
if redis.call('HEXISTS', KEYS[1], ARGV[1] .. ':done') == 1 then return false end
local message = redis.call('LPOP', KEYS[2])
if not message then return false end
redis.call('HSET', KEYS[1], field, message)
redis.call('EXPIRE', KEYS[1], ARGV[3])
return message
