--[[
  Appends a message to a mailbox from outside any run (`engine.send`) and takes one run parked on
  it off its waiters, to be woken (one message wakes one run). Only if the partition's settings
  hold the partition count the caller took (see create-run.lua): else the message would go to a
  mailbox no run of the deployment waits on.

  KEYS[1] mailbox list   KEYS[2] mailbox waiters set
  KEYS[3] the partition's settings hash (field `partitions`)
  ARGV[1] message JSON   ARGV[2] retention (seconds): a mailbox untouched that long expires
  ARGV[3] the partition count the caller took
  ARGV[4] the address   ARGV[5] now (epoch ms): an agent's inbox becomes due (markAgentDue)

  Returns { 1, wake? }: sent, with the wake id of the run woken, if one was parked there (the
          caller promotes it); { -1, count } the partition holds another count; { -2 } it holds
          none. Nothing is written unless sent.
]]
local count = redis.call('HGET', KEYS[3], 'partitions')
if not count then return { -2 } end
if count ~= ARGV[3] then return { -1, count } end
redis.call('RPUSH', KEYS[1], ARGV[1])
local ttl = tonumber(ARGV[2])
if ttl and ttl > 0 then redis.call('EXPIRE', KEYS[1], ttl) end
if ARGV[4] then markAgentDue(string.sub(KEYS[1], 1, #KEYS[1] - #ARGV[4]), ARGV[4], ARGV[5]) end
local wake = redis.call('SPOP', KEYS[2])
if wake then return { 1, wake } end
return { 1 }
