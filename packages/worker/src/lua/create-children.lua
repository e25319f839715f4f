--[[
  Creates the records of child runs of a fan-out as they start (a window at a time), from their
  inputs staged before the fan-out committed: `<parent id>.<parent step>.<index>`, running (its
  parent started it: the fan-out's window is what runs at once), with its first checkpoint (a
  delta against the parent's snapshot) and the parent's priority (makeChild in run-lifecycle.lua).
  A record that exists (a redelivery) is left as it is; a fan-out that is not the parent's current
  one, or a parent that no longer waits on it (cancelled, failed fast), creates nothing.
  Children that live in another partition (Partitions.indexOf) cannot be made here: their inputs
  are returned, for place-children.lua in their partitions.

  KEYS[1] the parent's fan-out hash   KEYS[2] the fan-out's staged inputs (hash: index -> checkpoint)
  ARGV[1] options, JSON: runPrefix (key prefix of run hashes), parentId, parentStep, now (epoch ms),
          indices (the children to create here), elsewhere (the children of other partitions),
          placements, placement (with `elsewhere`: the partition's placements under way and this
          one's member, added here; see RedisKeys.placements)

  Returns { created, given }:
    created: the records created, each as its index and its fields as a flat list of fields and
             values (what HGETALL would give), so the caller needs no read to run its first step
    given:   for `elsewhere` (empty when nothing may start): giveChildren's answer
             (run-lifecycle.lua)
]]
local o = cjson.decode(ARGV[1])
local fanOut = redis.call('HMGET', KEYS[1], 'step', 'flow', 'fingerprint', 'childTarget')
if fanOut[1] ~= tostring(o.parentStep) or not fanOut[4] then return { {}, {} } end
local parent = redis.call('HMGET', o.runPrefix .. o.parentId, 'status', 'priority')
if parent[1] ~= 'waiting' then return { {}, {} } end
local basics = { fanOut[2], fanOut[3], fanOut[4] }
local c = { runPrefix = o.runPrefix, parentId = o.parentId, parentStep = tostring(o.parentStep), now = o.now }
local created = {}
for _, index in ipairs(o.indices) do
  addChild(created, basics, parent[2], c, index, redis.call('HGET', KEYS[2], index))
end
local given = {}
if type(o.elsewhere) == 'table' and #o.elsewhere > 0 then
  given = giveChildren(basics, parent[2], KEYS[2], o.elsewhere, o)
end
return { created, given }
