--[[
  Writes one update of a shared memory (shared-memory.ts, README "Conversations"): a compare-and-set
  of the document the caller patched. A memory's keys live in the partition of its name.

  KEYS[1] the memory hash: value (JSON), version
  KEYS[2] its history (list of change JSON { version, id, writer, at, patch }, oldest first, capped)
  KEYS[3] the ids of the kept changes (sorted set: id -> the version it made)

  ARGV[1] the update's id    ARGV[2] base: the version the caller patched
  ARGV[3] ifVersion, or ''   ARGV[4] the document after the patch (JSON)
  ARGV[5] the change JSON (its version is base + 1)   ARGV[6] the history's cap

  Returns { result, version }: 'already' (this id was written), 'conflict' (ifVersion is not the
  version), 'moved' (base is not: patch the new version), 'applied' (version: the one it made).
]]
local version = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if redis.call('ZSCORE', KEYS[3], ARGV[1]) then return { 'already', version } end
if ARGV[3] ~= '' and tonumber(ARGV[3]) ~= version then return { 'conflict', version } end
if tonumber(ARGV[2]) ~= version then return { 'moved', version } end
version = version + 1
local cap = tonumber(ARGV[6])
redis.call('HSET', KEYS[1], 'value', ARGV[4], 'version', version)
redis.call('RPUSH', KEYS[2], ARGV[5])
redis.call('LTRIM', KEYS[2], -cap, -1)
redis.call('ZADD', KEYS[3], version, ARGV[1])
redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -(cap + 1))
return { 'applied', version }
