--[[
  Appends a message to a mailbox from outside any run (`engine.send`) and takes the runs parked
  on it off its waiters, to be woken.

  KEYS[1] mailbox list   KEYS[2] mailbox waiters set
  ARGV[1] message JSON   ARGV[2] retention (seconds): a mailbox untouched that long expires

  Returns: the wake job ids of the runs parked on the address (the caller promotes them)
]]
redis.call('RPUSH', KEYS[1], ARGV[1])
local ttl = tonumber(ARGV[2])
if ttl and ttl > 0 then redis.call('EXPIRE', KEYS[1], ttl) end
local wakes = redis.call('SMEMBERS', KEYS[2])
redis.call('DEL', KEYS[2])
return wakes
