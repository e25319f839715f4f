--[[
  Creates the records of child runs of a fan-out as they start (a window at a time), from their
  inputs staged before the fan-out committed: `<parent id>.<parent step>.<index>`, running (its
  parent started it: the fan-out's window is what runs at once), with its first checkpoint (a
  delta against the parent's snapshot) and the parent's priority (makeChild in run-lifecycle.lua).
  A record that exists (a redelivery) is left as it is; a fan-out that is not the parent's current
  one, or a parent that no longer waits on it (cancelled, failed fast), creates nothing.

  KEYS[1] the parent's fan-out hash   KEYS[2] the fan-out's staged inputs (hash: index -> checkpoint)
  ARGV[1] options, JSON: runPrefix (key prefix of run hashes), parentId, parentStep, now (epoch ms),
          indices (the children to create)

  Returns the records created: for each, its index and its fields as a flat list of fields and
  values (what HGETALL would give), so the caller needs no read to run its first step.
]]
local o = cjson.decode(ARGV[1])
local fanOut = redis.call('HMGET', KEYS[1], 'step', 'flow', 'fingerprint', 'childTarget')
if fanOut[1] ~= tostring(o.parentStep) or not fanOut[4] then return {} end
local parent = redis.call('HMGET', o.runPrefix .. o.parentId, 'status', 'priority')
if parent[1] ~= 'waiting' then return {} end
local c = { runPrefix = o.runPrefix, parentId = o.parentId, parentStep = tostring(o.parentStep), inputsKey = KEYS[2],
  now = o.now }
local created = {}
for _, index in ipairs(o.indices) do
  local fields = makeChild({ fanOut[2], fanOut[3], fanOut[4] }, parent[2], c, index)
  if fields then table.insert(created, { index, fields }) end
end
return created
