--[[
  Records how one child of a waiting parent ended (idempotent per child index) and says what
  the parent does next: start another child, resume (fan-in), or fail at once (fail-fast).
  Used for item children, redelivered ends, and the ends of child runs in another partition than
  their parent (their commit records the end in the child's partition, then this applies it:
  once, since the outcome is recorded once per index; a crash in between leaves the child's task
  to be delivered again, which finds the child ended and reports it). A child run in its parent's
  partition reports through commit-step.lua when it ends.

  KEYS[1..8] the parent's run hash, error list, conflict list, fan-out hash, outcome hash,
             reserved hash, history list, stream

  ARGV[1] options, JSON (recordChildEnd's `c`, run-lifecycle.lua): parentId, parentStep, index,
          outcome (JSON), ok ('1' completed, '0' failed or cancelled), failFast ('1' or '0'),
          parentError (JSON, used when the parent fails fast), errorRecord (JSON or '', appended
          to the parent's errors), now (epoch ms), channel, changes, retention (seconds), maxErrors,
          take (true: the caller runs the next child itself)
  ARGV[2..] hash, staging key pairs: copies of the values of `values` that the parent's partition
          may not hold (the child's commit claimed them in its own partition; stagedValues)

  With `give` (and placements, placement): the first child this end starts is given to the
  caller to place in its partition (giveChildren in run-lifecycle.lua), and its placement recorded.

  Returns { code, first, count, given } as recordChildEnd says; `given` with `give` only.
  Emits: PUBLISH <channel> {type:'ended', ...} when the parent ends here.
]]
local c = cjson.decode(ARGV[1])
c.staged = stagedValues(2)
local ended = recordChildEnd({ KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8] }, c)
if c.give and ended[1] == 1 and ended[3] > 0 then
  local fanOut = redis.call('HMGET', KEYS[4], 'flow', 'fingerprint', 'childTarget', 'inputs')
  if fanOut[3] and fanOut[4] then
    local given = giveChildren(fanOut, redis.call('HGET', KEYS[1], 'priority'), fanOut[4], { ended[2] }, c)
    table.insert(ended, given)
  end
end
return ended
