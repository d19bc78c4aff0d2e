local now = now_ms()
local v = redis.call('HMGET', KEYS[1], 'state', 'token', 'expires_at')
if not v[3] or now >= tonumber(v[3]) then return {'not_owner', fmt(now)} end
if v[2] ~= ARGV[1] then return {'not_owner', fmt(now), redis.call('HGETALL', KEYS[1])} end
if v[1] == 'in_progress' then
  local expires_at = now + tonumber(ARGV[4])
  redis.call('HSET', KEYS[1], 'state', 'completed', 'outcome', ARGV[2], 'outcome_kind', ARGV[3],
    'ttl_ms', ARGV[4], 'expires_at', fmt(expires_at))
  redis.call('PEXPIREAT', KEYS[1], fmt(expires_at))
end
return {'recorded', fmt(now)}
