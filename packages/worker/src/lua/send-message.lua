--[[
  Appends a message to a mailbox from outside any run (`engine.send`) and takes one run parked on
  it off its waiters, to be woken (one message wakes one run).

  KEYS[1] mailbox list   KEYS[2] mailbox waiters set
  ARGV[1] message JSON   ARGV[2] retention (seconds): a mailbox untouched that long expires

  Returns: the wake id of the run woken, if one was parked there (the caller promotes it)
]]
redis.call('RPUSH', KEYS[1], ARGV[1])
local ttl = tonumber(ARGV[2])
if ttl and ttl > 0 then redis.call('EXPIRE', KEYS[1], ttl) end
local wake = redis.call('SPOP', KEYS[2])
if wake then return { wake } end
return {}
