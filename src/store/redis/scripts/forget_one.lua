-- Deletes KEYS[1] only if it is a record: a hash whose `key` field is the 64-hex its name ends
-- with. A key of another application that happens to match the SCAN pattern is left alone.
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' then return 0 end
if redis.call('HGET', KEYS[1], 'key') ~= string.sub(KEYS[1], -64) then return 0 end
redis.call('UNLINK', KEYS[1])
return 1
