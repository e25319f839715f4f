--[[
  A follower of a run's stream starts: while the run goes on, it is marked `followed`, so that its
  end appends an end marker to its stream even when its steps wrote no entry (finish in
  run-lifecycle.lua writes one only then). The follower wakes on that marker; of a run that has
  ended already, it learns from the status returned here.

  KEYS[1] run hash

  ARGV none

  Returns { status, step }, or {} for no such run (nothing is written then).
]]
local position = redis.call('HMGET', KEYS[1], 'status', 'step')
if not position[1] then return {} end
if not isFinal(position[1]) then redis.call('HSET', KEYS[1], 'followed', '1') end
return { position[1], position[2] or '0' }
