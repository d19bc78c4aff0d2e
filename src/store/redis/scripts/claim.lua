local now = now_ms()
local token = ARGV[1]
local flat = redis.call('HGETALL', KEYS[1])
if #flat > 0 then
  local f = fields(flat)
  local alive = live(f, now)
  if type(alive) == 'table' then return alive end
  if alive then
    if f['state'] == 'in_progress' and f['token'] == token then
      return {'acquired', fmt(now), f['lease_end']}
    end
    local replace = ARGV[4] == '1' and f['state'] == 'completed' and f['outcome_kind'] == 'failure'
    if not replace then
      local answer = 'abandoned'
      if f['state'] == 'completed' then
        answer = 'completed'
      elseif now < tonumber(f['lease_end']) then
        answer = 'in_progress'
      end
      return {answer, fmt(now), flat}
    end
  end
  redis.call('DEL', KEYS[1])
end
local lease_end = now + tonumber(ARGV[2])
local expires_at = lease_end + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'v', ARGV[5], 'key', ARGV[6], 'scope', ARGV[7],
  'state', 'in_progress', 'token', token, 'claimed_at', fmt(now), 'lease_end', fmt(lease_end),
  'ttl_ms', ARGV[3], 'expires_at', fmt(expires_at))
if ARGV[8] == '1' then redis.call('HSET', KEYS[1], 'tenant', ARGV[9]) end
redis.call('PEXPIREAT', KEYS[1], fmt(expires_at))
return {'acquired', fmt(now), fmt(lease_end)}
