--[[
  Parks a run whose step found its mailbox empty: it waits (`waiting`, no worker, no
  connection) until a message comes to the address or its deadline passes, then the same step
  runs again. The step's sends so far leave now (so `ask` can be answered), and are counted so
  that the step, run again, does not send them twice.

  KEYS[1..6] run hash, error list, conflict list, fan-out hash, outcome hash, reserved hash

  ARGV[1]  expected step counter, then ':' and the expected park count (see atStep)
  ARGV[2]  replay JSON (StepReplay: sends delivered, the park, receives timed out): kept on the
           run as `replay` until the step commits
  ARGV[3]  the address it waits on
  ARGV[4]  (unused)
  ARGV[5]  now (epoch ms)   ARGV[6] run id   ARGV[7] key prefix
  ARGV[8]  retention of a finished run (seconds)   ARGV[9] events channel
  ARGV[10] outbox size n, then n pairs (address, message JSON)

  Returns { code, parkCount, ready, wakes }:
    code 1 parked; its wake job id is `<run id>-<step>-p<parkCount>` (the caller enqueues it,
           delayed to the deadline, at once when `ready` is 1: a message is already there)
         0 stale; 2 a cancel was pending: the run is cancelled now; -1 no such run
    wakes: wake job ids of runs parked on addresses this park delivered to
]]
local keys = { KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6] }
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return { -1, 0, 0, {} } end
local expectedStep, expectedParks = string.match(ARGV[1], '^(%d+):(%d+)$')
if isFinal(status) or not atStep(KEYS[1], expectedStep, expectedParks) then return { 0, 0, 0, {} } end
local prefix, wakes = ARGV[7], {}
if redis.call('HGET', KEYS[1], 'cancel') == '1' then
  releaseReserved(KEYS[6], prefix, wakes)
  finish(keys, ARGV[6], 'cancelled', ARGV[5], ARGV[8], ARGV[9])
  return { 2, 0, 0, wakes }
end
leaveWaiters(KEYS[1], prefix, ARGV[6])
local parkCount = redis.call('HINCRBY', KEYS[1], 'parkCount', 1)
redis.call('HSET', KEYS[1], 'status', 'waiting', 'replay', ARGV[2], 'updatedAt', ARGV[5])
redis.call('HSETNX', KEYS[1], 'startedAt', ARGV[5])
deliverOutbox(prefix, ARGV, 10, wakes, ARGV[8])
redis.call('SADD', waitersKey(prefix, ARGV[3]), ARGV[6] .. '-' .. expectedStep .. '-p' .. parkCount)
local ready = 0
if redis.call('LLEN', mailboxKey(prefix, ARGV[3])) > 0 then ready = 1 end
return { 1, parkCount, ready, wakes }
