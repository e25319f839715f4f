--[[
  Creates the records of fan-out children that live in another partition than their parent
  (Partitions.indexOf), all of this script's partition, from what their parent's partition gave
  (create-children.lua): see makeChild in run-lifecycle.lua. A record that exists is left as it
  is. The caller checks afterwards that the parent still waits on them (and cancels them when it
  does not): a parent cancelled meanwhile leaves no child running.

  KEYS[1] the run hash of the first child (for routing: every key here is of its partition)
  ARGV[1] options, JSON: runPrefix (this partition's key prefix of run hashes), parentId,
          parentStep, now (epoch ms), flow, fingerprint, childTarget (JSON), priority ('' none),
          takenKey (optional: a worker's set of taken tasks; the first child made joins it as its
          first step's task id `<child id>-0`: the worker runs it itself, ChildEndReport.take)
  ARGV[2..] index, checkpoint pairs: the children's staged inputs

  Returns the records created, each as its index and its fields as a flat list.
]]
local o = cjson.decode(ARGV[1])
local basics = { o.flow, o.fingerprint, o.childTarget }
local priority = o.priority
if priority == '' then priority = nil end
local c = { runPrefix = o.runPrefix, parentId = o.parentId, parentStep = tostring(o.parentStep), now = o.now,
  takenKey = o.takenKey }
local created = {}
for i = 2, #ARGV, 2 do addChild(created, basics, priority, c, ARGV[i], ARGV[i + 1]) end
return created
