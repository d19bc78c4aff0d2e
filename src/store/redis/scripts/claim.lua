-- One HMGET of the record's fields by position (RECORD_FIELDS in scripts.rs): a repeat reads
-- only what it answers, and no Lua table of names is built.
local r = redis.call('HMGET', KEYS[1], 'v', 'key', 'tenant', 'scope', 'state', 'token',
  'claimed_at', 'lease_end', 'ttl_ms', 'expires_at', 'outcome', 'fingerprint', 'outcome_kind')
local now = now_ms()
local token = ARGV[1]
local exists = false
for i = 1, 13 do
  if r[i] then exists = true break end
end
if exists then
  local e = tonumber(r[10])
  if e == nil then
    return redis.error_reply('idemkit: record ' .. KEYS[1] .. ' has no expires_at')
  end
  local state = r[5]
  if now < e then
    if state == 'in_progress' and r[6] == token then
      return {'acquired', fmt(now), r[8]}
    end
    -- RETURN_CACHED_IF_SUCCESS replaces a remembered failure, unless the payload is checked
    -- (ARGV[11]) and another payload made it (SPEC v1.1 rule 9): that one is answered.
    local replace = ARGV[4] == '1' and state == 'completed' and r[13] == 'failure'
    if replace and ARGV[11] == '1' and ARGV[10] ~= '' and r[12] and r[12] ~= ARGV[10] then
      replace = false
    end
    if not replace then
      local answer = 'abandoned'
      if state == 'completed' then
        answer = 'completed'
      elseif now < tonumber(r[8]) then
        answer = 'in_progress'
      end
      return {answer, fmt(now), r}
    end
  end
  redis.call('DEL', KEYS[1])
end
local lease_end = now + tonumber(ARGV[2])
local expires_at = lease_end + tonumber(ARGV[3])
if ARGV[8] == '1' then
  redis.call('HSET', KEYS[1], 'v', ARGV[5], 'key', ARGV[6], 'tenant', ARGV[9], 'scope', ARGV[7],
    'state', 'in_progress', 'token', token, 'claimed_at', fmt(now), 'lease_end', fmt(lease_end),
    'ttl_ms', ARGV[3], 'expires_at', fmt(expires_at))
else
  redis.call('HSET', KEYS[1], 'v', ARGV[5], 'key', ARGV[6], 'scope', ARGV[7],
    'state', 'in_progress', 'token', token, 'claimed_at', fmt(now), 'lease_end', fmt(lease_end),
    'ttl_ms', ARGV[3], 'expires_at', fmt(expires_at))
end
if ARGV[10] ~= '' then
  redis.call('HSET', KEYS[1], 'fingerprint', ARGV[10])
end
redis.call('PEXPIREAT', KEYS[1], fmt(expires_at))
return {'acquired', fmt(now), fmt(lease_end)}
