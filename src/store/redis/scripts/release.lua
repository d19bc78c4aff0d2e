local now = now_ms()
local v = redis.call('HMGET', KEYS[1], 'state', 'token', 'expires_at')
if v[3] and now < tonumber(v[3]) and v[1] == 'in_progress' and v[2] == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
