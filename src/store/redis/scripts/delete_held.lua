-- Deletes the live record KEYS[1] only if it still holds the token ARGV[1]: the record an
-- operator was shown, not one claimed again since. Answers 1 if it did, else 0.
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'hash' and kind ~= 'string' then return 0 end
local now = now_ms()
local f = read(now)
if not f or f['err'] or f['token'] ~= ARGV[1] then return 0 end
local e = tonumber(f['expires_at'])
if e == nil or now >= e then return 0 end
redis.call('DEL', KEYS[1])
return 1
