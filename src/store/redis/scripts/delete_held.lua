-- Deletes the live record KEYS[1] only if it still holds the token ARGV[1]: the record an
-- operator was shown, not one claimed again since. Answers 1 if it did, else 0.
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' then return 0 end
local f = redis.call('HMGET', KEYS[1], 'token', 'expires_at')
if f[1] ~= ARGV[1] then return 0 end
local e = tonumber(f[2])
if e == nil or now_ms() >= e then return 0 end
redis.call('DEL', KEYS[1])
return 1
