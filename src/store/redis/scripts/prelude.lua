local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function fmt(n) return string.format('%d', n) end
local function fields(flat)
  local f = {}
  for i = 1, #flat, 2 do f[flat[i]] = flat[i + 1] end
  return f
end
local function live(f, now)
  local e = tonumber(f['expires_at'])
  if e == nil then
    return redis.error_reply('idemkit: record ' .. KEYS[1] .. ' has no expires_at')
  end
  return now < e
end
local function record_outcome(now, outcome, kind, ttl_ms)
  local expires_at = now + tonumber(ttl_ms)
  redis.call('HSET', KEYS[1], 'state', 'completed', 'outcome', outcome, 'outcome_kind', kind,
    'ttl_ms', ttl_ms, 'expires_at', fmt(expires_at))
  redis.call('PEXPIREAT', KEYS[1], fmt(expires_at))
end
