--[[
  Records how one child of a waiting parent ended (idempotent per child index) and says what
  the parent does next: start another child, resume (fan-in), or fail at once (fail-fast).
  Used for item children and redelivered ends; a child run reports through commit-step.lua when
  it ends.

  KEYS[1..8] the parent's run hash, error list, conflict list, fan-out hash, outcome hash,
             reserved hash, history list, stream

  ARGV[1] options, JSON (recordChildEnd's `c`, run-lifecycle.lua): parentId, parentStep, index,
          outcome (JSON), ok ('1' completed, '0' failed or cancelled), failFast ('1' or '0'),
          parentError (JSON, used when the parent fails fast), errorRecord (JSON or '', appended
          to the parent's errors), now (epoch ms), channel, changes, retention (seconds), maxErrors,
          take (true: the caller runs the next child itself)

  Returns { code, first, count } as recordChildEnd says.
  Emits: PUBLISH <channel> {type:'ended', ...} when the parent ends here.
]]
return recordChildEnd({ KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8] }, cjson.decode(ARGV[1]))
