--[[
  Creates the records of child runs of a fan-out as they start (a window at a time), from their
  inputs staged before the fan-out committed: `<parent id>.<parent step>.<index>`, queued, with
  its first checkpoint (a delta against the parent's snapshot) and the parent's priority. A record
  that exists (a redelivery) is left as it is; a fan-out that is not the parent's current one
  creates nothing.

  KEYS[1] the parent's fan-out hash   KEYS[2] the fan-out's staged inputs (hash: index -> checkpoint)
  ARGV[1] options, JSON: runPrefix (key prefix of run hashes), parentId, parentStep, now (epoch ms),
          indices (the children to create)

  Returns the number of records created.
]]
local o = cjson.decode(ARGV[1])
local fanOut = redis.call('HMGET', KEYS[1], 'step', 'flow', 'fingerprint', 'childTarget')
if fanOut[1] ~= tostring(o.parentStep) or not fanOut[4] then return 0 end
local priority = redis.call('HGET', o.runPrefix .. o.parentId, 'priority')
local created = 0
for _, index in ipairs(o.indices) do
  local childKey = o.runPrefix .. o.parentId .. '.' .. o.parentStep .. '.' .. index
  local checkpoint = redis.call('HGET', KEYS[2], index)
  if checkpoint and redis.call('EXISTS', childKey) == 0 then
    redis.call('HSET', childKey, 'flow', fanOut[2], 'fingerprint', fanOut[3], 'status', 'queued', 'step', 0,
      'attempt', 0, 'createdAt', o.now, 'updatedAt', o.now, 'parentId', o.parentId, 'parentStep', o.parentStep,
      'childIndex', index, 'target', fanOut[4], 'checkpoint', checkpoint)
    if priority then redis.call('HSET', childKey, 'priority', priority) end
    created = created + 1
  end
end
return created
