--[[
  Moves a waiting BullMQ job to the front of its queue's wait list (the end workers take from),
  so a task woken for a budget (flow control) runs next instead of behind every step queued
  meanwhile: a budget's room would otherwise stand idle while its waiter queues. A job not in the
  wait list (taken already, still delayed, paused queue) is left where it is.

  KEYS[1] the BullMQ wait list of the step queue
  ARGV[1] the job id

  Returns 1 moved, 0 not in the wait list.
]]
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 1 then
  redis.call('RPUSH', KEYS[1], ARGV[1])
  return 1
end
return 0
