--[[
  Creates a run: its record (status `queued`) and its place in the runs index. With an
  idempotency key, only if no retained run holds the key: then the key names the new run (the
  key expires with the run, see finish in run-lifecycle.lua). Only if the partition's settings
  hold the partition count the caller took (a purge, or a Redis restarted empty, and a worker of
  another count since: the run would go to a partition no worker serves).

  KEYS[1] run hash   KEYS[2] runs index (sorted set by creation time)
  KEYS[3] runs sequence (a counter: orders runs created in the same millisecond)
  KEYS[4] the partition's settings hash (field `partitions`)
  KEYS[5] (with an idempotency key) the key's string key
  KEYS[takenKey] (a run its maker runs itself, NewRun.takenBy) that worker's taken tasks (a set)

  ARGV[1] options, JSON: id, now (epoch ms), changes (channel), runPrefix, partitions (the count
          the caller took), fields (how many ARGV the record's fields take), values (hashes of the
          values stored apart its checkpoint references, claimed for it), valuePrefix,
          valuesSuffix (redis-keys.ts), taken (the first step's task id, which joins KEYS[takenKey]),
          event (a fork's `forked` entry of the run's event log, JSON; logEvent)
  ARGV[2..1 + fields] the record's fields and values (flow, fingerprint, checkpoint, target, ...)
  ARGV[2 + fields..] hash, staging key pairs: the texts of `values` (stagedValues)

  Returns { 1 } created; { 0, run id } the key is held by that run; { -1, count } the partition
  holds another count; { -2 } it holds none. Nothing is written unless created.
]]
local o = cjson.decode(ARGV[1])
local count = redis.call('HGET', KEYS[4], 'partitions')
if not count then return { -2 } end
if count ~= tostring(o.partitions) then return { -1, count } end
local idempotencyKey = KEYS[5] ~= nil and o.takenKey ~= 5
if idempotencyKey then
  local holder = redis.call('GET', KEYS[5])
  if holder and redis.call('EXISTS', o.runPrefix .. holder) == 1 then return { 0, holder } end
  redis.call('SET', KEYS[5], o.id)
end
local fields = {}
for i = 2, 1 + (o.fields or (#ARGV - 1)) do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
if idempotencyKey then redis.call('HSET', KEYS[1], 'idempotencyKey', KEYS[5]) end
if o.taken then redis.call('SADD', KEYS[o.takenKey], o.taken) end
if o.event then logEvent(KEYS[1], o.event) end -- a fork's `forked` entry
if o.fields then claimValues(KEYS[1], o.id, o.values, stagedValues(2 + o.fields), o) end
indexRun(KEYS[2], KEYS[3], o.id, o.now)
changed(KEYS[1], o.id, o)
return { 1 }
