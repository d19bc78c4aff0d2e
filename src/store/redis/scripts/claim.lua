-- The claim's rare path (the common one is a plain `SET key <claim> NX GET PX`, see mod.rs):
-- a record to judge on the server's clock, of either format. ARGV as in scripts.rs.
local now = now_ms()
local token = ARGV[1]
local f = read(now)
if f and f['err'] then return f end
if f then
  local e = tonumber(f['expires_at'])
  if e == nil then
    return redis.error_reply('idemkit: record ' .. KEYS[1] .. ' has no expires_at')
  end
  local state = f['state']
  if now < e then
    if state == 'in_progress' and f['token'] == token then
      return {'acquired', fmt(now), f['lease_end']}
    end
    -- RETURN_CACHED_IF_SUCCESS replaces a remembered failure, unless the payload is checked
    -- (ARGV[11]) and another payload made it (SPEC v1.1 rule 9): that one is answered.
    local replace = ARGV[4] == '1' and state == 'completed' and f['outcome_kind'] == 'failure'
    if replace and ARGV[11] == '1' and ARGV[10] ~= '' and f['fingerprint']
      and f['fingerprint'] ~= ARGV[10] then
      replace = false
    end
    if not replace then
      local answer = 'abandoned'
      if state == 'completed' then
        answer = 'completed'
      elseif now < tonumber(f['lease_end']) then
        answer = 'in_progress'
      end
      return {answer, fmt(now), values(f)}
    end
  end
end
write_claim(token, ARGV[2], ARGV[3], ARGV[10], ARGV[7])
return {'acquired', fmt(now), fmt(now + tonumber(ARGV[2]))}
