--[[
  Parks a run whose step found its mailbox empty: it waits (`waiting`, no worker, no
  connection) until a message comes to the address or its deadline passes, then the same step
  runs again. The step's sends so far leave now (so `ask` can be answered), and are counted so
  that the step, run again, does not send them twice.

  KEYS[1..8] run hash, error list, conflict list, fan-out hash, outcome hash, reserved hash, history
             list, stream

  ARGV[1] options, JSON:
    at         expected step counter, ':' and the expected park count (see atStep)
    replay     StepReplay JSON (sends delivered, the park, receives timed out): kept on the run
               as `replay` until the step commits
    address    the address it waits on
    addresses  (a receiveAny) every address it waits on, `address` first
    now        epoch ms       runId      retention (seconds)      channel      changes
    mailboxPrefix, waitersPrefix   key prefixes of mailboxes and their waiter sets
    outbox     the step's sends so far, { address, message JSON } pairs
    takenKey   (a worker that takes a run it wakes) its set of taken wakes: see takeWake
    woken      true when the step parked before on another call: logWoken
    ask        (the receive of an agent's ask) { from, to }: its wait-for edge is written, or, when
               it closes a wait cycle (askCycle), the answer to the ask is the chain (`cycle`)
    event      the `parked` entry of the run's event log (JSON), absent when the step parks
               again on the same call (a re-check that found nothing)

  Returns { code, parkCount, ready, wakes, taken, takenRun, started }:
    code 1 parked; its wake id is `<run id>-<step>-p<parkCount>` (the caller adds the wake,
           delayed to the deadline, at once when `ready` is 1: a message is already there)
         0 stale (ended, or moved on); -1 no such run
    wakes: wake ids of runs parked on addresses this park delivered to
    taken: the wake id the worker took (takeWake), not among `wakes`; absent when none
    takenRun: the taken wake's run, read for it (loadTaken in run-lifecycle.lua), or absent
    started: the turns o.starts started (startDelivered in agent-lifecycle.lua)
]]
local o = cjson.decode(ARGV[1])
local keys = { KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8] }
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return { -1, 0, 0, {} } end
local expectedStep, expectedParks = string.match(o.at, '^(%d+):(%d+)$')
if isFinal(status) or not atStep(KEYS[1], expectedStep, expectedParks) then return { 0, 0, 0, {} } end
local wakes = {}
o.wakes = wakes -- handOff marks them (HANDED_OFF)
endStreamTry(KEYS[1]) -- the woken step's try is no restart
if o.woken then logWoken(KEYS[1], KEYS[6], o.now) end
if o.event then logEvent(KEYS[1], o.event) end
leaveWaiters(KEYS[1], o, o.runId)
local parkCount = redis.call('HINCRBY', KEYS[1], 'parkCount', 1)
redis.call('HSET', KEYS[1], 'status', 'waiting', 'replay', o.replay, 'updatedAt', o.now)
redis.call('HSETNX', KEYS[1], 'startedAt', o.now)
deliverOutbox(o, o.outbox, wakes, o.retention, KEYS[1])
local wake = o.runId .. '-' .. expectedStep .. '-p' .. parkCount
if type(o.ask) == 'table' then
  local cycle = askCycle(o, o.ask)
  if cycle then
    local answer = cjson.encode({ id = wake .. '.cycle', body = cjson.null, sentAt = tonumber(o.now), cycle = cycle })
    deliverOutbox(o, { { o.address, answer } }, wakes, o.retention, KEYS[1])
  else
    redis.call('HSET', asksKey(o), o.ask.from, cjson.encode({ t = o.ask.to, r = o.runId, w = wake, a = o.address, at = tonumber(o.now) }))
  end
end
local ready = 0
for _, address in ipairs(o.addresses or { o.address }) do
  if waitOn(o, KEYS[1], o.runId, address, wake) == 1 then ready = 1 end
end
changed(KEYS[1], o.runId, o)
local started = startDelivered(o.starts, o.now, o)
local taken = takeWake(o, wakes)
return { 1, parkCount, ready, wakes, taken, loadTaken(o, taken), started }
