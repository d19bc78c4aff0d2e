local now = now_ms()
local v = redis.call('HMGET', KEYS[1], 'state', 'token', 'expires_at')
if not v[3] or now >= tonumber(v[3]) then return {'not_owner', fmt(now)} end
if v[2] ~= ARGV[1] then return {'not_owner', fmt(now), redis.call('HGETALL', KEYS[1])} end
if v[1] == 'in_progress' then
  record_outcome(now, ARGV[2], ARGV[3], ARGV[4])
end
return {'recorded', fmt(now)}
