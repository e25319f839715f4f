--[[
  Records how one child of a waiting parent ended (idempotent per child index) and says what
  the parent does next: start another child, resume (fan-in), or fail at once (fail-fast).
  Used for item children; a child run reports through commit-step.lua when it ends.

  KEYS[1] parent run hash        KEYS[2] parent error list     KEYS[3] parent conflict list
  KEYS[4] parent fan-out hash    KEYS[5] parent outcome hash   KEYS[6] parent reserved hash

  ARGV[1]  parent step counter the child belongs to
  ARGV[2]  child index
  ARGV[3]  outcome JSON
  ARGV[4]  1 if the child completed, 0 if it failed or was cancelled
  ARGV[5]  1 for fail-fast, 0 for collect
  ARGV[6]  run error JSON for the parent, used when it fails fast
  ARGV[7]  now (epoch ms)
  ARGV[8]  events channel
  ARGV[9]  parent run id
  ARGV[10] retention of a finished run (seconds)
  ARGV[11] error record JSON to append to the parent's error list ('' none)
  ARGV[12] most error records kept

  Returns { code, next } as recordChildEnd (run-lifecycle.lua) says.
  Emits: PUBLISH <channel> {type:'ended', ...} when the parent ends here.
]]
return recordChildEnd({ KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6] }, {
  parentStep = ARGV[1], index = ARGV[2], outcome = ARGV[3], ok = ARGV[4], failFast = ARGV[5],
  parentError = ARGV[6], now = ARGV[7], channel = ARGV[8], parentId = ARGV[9], retention = ARGV[10],
  errorRecord = ARGV[11], maxErrors = ARGV[12],
})
