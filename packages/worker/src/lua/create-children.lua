--[[
  Creates the records of child runs of a fan-out as they start (a window at a time), from their
  inputs staged before the fan-out committed: `<parent id>.<parent step>.<index>`, running (its
  parent started it: the fan-out's window is what runs at once), with its first checkpoint (a
  delta against the parent's snapshot) and the parent's priority. A record that exists (a
  redelivery) is left as it is; a fan-out that is not the parent's current one, or a parent that
  no longer waits on it (cancelled, failed fast), creates nothing.

  KEYS[1] the parent's fan-out hash   KEYS[2] the fan-out's staged inputs (hash: index -> checkpoint)
  ARGV[1] options, JSON: runPrefix (key prefix of run hashes), parentId, parentStep, now (epoch ms),
          indices (the children to create), takenKey (a worker that runs the first child itself:
          its set of taken tasks, which gets that child's first step task id, `<child id>-0`,
          when its record is made here)

  Returns the records created: for each, its index and its fields as a flat list of fields and
  values (what HGETALL would give), so the caller needs no read to run its first step.
]]
local o = cjson.decode(ARGV[1])
local fanOut = redis.call('HMGET', KEYS[1], 'step', 'flow', 'fingerprint', 'childTarget')
if fanOut[1] ~= tostring(o.parentStep) or not fanOut[4] then return {} end
local parent = redis.call('HMGET', o.runPrefix .. o.parentId, 'status', 'priority')
if parent[1] ~= 'waiting' then return {} end
local priority = parent[2]
local created = {}
for _, index in ipairs(o.indices) do
  local childKey = o.runPrefix .. o.parentId .. '.' .. o.parentStep .. '.' .. index
  local checkpoint = redis.call('HGET', KEYS[2], index)
  if checkpoint and redis.call('EXISTS', childKey) == 0 then
    local fields = { 'flow', fanOut[2], 'fingerprint', fanOut[3], 'status', 'running', 'step', 0, 'attempt', 0,
      'createdAt', o.now, 'startedAt', o.now, 'updatedAt', o.now, 'parentId', o.parentId,
      'parentStep', o.parentStep, 'childIndex', index, 'target', fanOut[4], 'checkpoint', checkpoint }
    if priority then
      table.insert(fields, 'priority')
      table.insert(fields, priority)
    end
    redis.call('HSET', childKey, unpack(fields))
    table.insert(created, { index, fields })
    if o.takenKey and index == o.indices[1] then
      redis.call('SADD', o.takenKey, o.parentId .. '.' .. o.parentStep .. '.' .. index .. '-0')
    end
  end
end
return created
