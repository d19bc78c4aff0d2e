local now = now_ms()
local f = read(now)
if f and f['err'] then return f end
if f and now < tonumber(f['expires_at']) and f['state'] == 'in_progress' and f['token'] == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
