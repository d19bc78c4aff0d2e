-- Deletes KEYS[1] only if it is a record: a hash whose `key` field is the 64-hex its name ends
-- with (v1), or a string of the v2 shape. A key of another application that happens to match the
-- SCAN pattern is left alone.
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'hash' then
  if redis.call('HGET', KEYS[1], 'key') ~= string.sub(KEYS[1], -64) then return 0 end
elseif kind == 'string' then
  if not decode2(redis.call('GET', KEYS[1]), 0, -1) then return 0 end
else
  return 0
end
redis.call('UNLINK', KEYS[1])
return 1
