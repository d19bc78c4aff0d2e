local now = now_ms()
local flat = redis.call('HGETALL', KEYS[1])
if #flat == 0 then return {'not_found', fmt(now)} end
local f = fields(flat)
local alive = live(f, now)
if type(alive) == 'table' then return alive end
if not alive then return {'not_found', fmt(now)} end
if f['state'] == 'completed' then return {'already_completed', fmt(now), flat} end
if f['token'] ~= ARGV[1] then return {'token_mismatch', fmt(now), flat} end
if ARGV[2] == 'release' then
  redis.call('DEL', KEYS[1])
else
  local expires_at = now + tonumber(ARGV[5])
  redis.call('HSET', KEYS[1], 'state', 'completed', 'outcome', ARGV[3], 'outcome_kind', ARGV[4],
    'ttl_ms', ARGV[5], 'expires_at', fmt(expires_at))
  redis.call('PEXPIREAT', KEYS[1], fmt(expires_at))
end
return {'done', fmt(now)}
