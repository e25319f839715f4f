--[[
  Takes one message off a mailbox wherever it stands in the queue: a question an `ask` left there,
  answered by a person (engine.answer). Only a message with a `replyTo` is taken.

  KEYS[1] mailbox list
  ARGV[1] message id

  Returns { 1, message JSON } taken; { 2 } it has no replyTo (left where it is); { 0 } no such message.
]]
for _, message in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  local decoded = cjson.decode(message)
  if decoded.id == ARGV[1] then
    if type(decoded.replyTo) ~= 'string' then return { 2 } end
    redis.call('LREM', KEYS[1], 1, message)
    return { 1, message }
  end
end
return { 0 }
