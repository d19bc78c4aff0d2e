-- Deletes KEYS[1] if it is a record that is expired but still present (native expiry normally
-- gets there first); a v2 claim without a native expiry counts as expired.
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'hash' and kind ~= 'string' then return 0 end
local now = now_ms()
local f = read(now)
if not f or f['err'] then return 0 end
local e = tonumber(f['expires_at'])
if e and now >= e then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
