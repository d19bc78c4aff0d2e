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
-- Record v2: one string `2<s>|token|claimed_at|lease_ms|ttl_ms|expires_at|fingerprint|<n>|`
-- then n bytes of scope, then the outcome JSON. <s> is `p` (in progress: claimed_at and
-- expires_at are empty, the key's PEXPIRETIME says when it expires) or the outcome kind of a completed
-- record (`s`uccess, `f`ailure, `t`oo_large, `i`ndeterminate).
local KINDS = {s = 'success', f = 'failure', t = 'too_large', i = 'indeterminate'}
local LETTERS = {success = 's', failure = 'f', too_large = 't', indeterminate = 'i'}
local function encode2(s, token, claimed_at, lease_ms, ttl_ms, expires_at, fp, scope, outcome)
  return '2' .. s .. '|' .. token .. '|' .. claimed_at .. '|' .. lease_ms .. '|' .. ttl_ms .. '|'
    .. expires_at .. '|' .. (fp or '') .. '|' .. #scope .. '|' .. scope .. (outcome or '')
end
-- The key (last 64 characters) and tenant (`_`, or `t` + hex just before `:<key>`) of KEYS[1].
local function identity()
  local name = KEYS[1]
  local key = string.sub(name, -64)
  local stop = #name - 65
  if string.sub(name, stop, stop) == '_' then return key, nil end
  local start = stop
  while start > 0 and string.find(string.sub(name, start, start), '^[0-9a-f]$') do
    start = start - 1
  end
  local hex = string.sub(name, start + 1, stop)
  return key, (string.gsub(hex, '..', function(h) return string.char(tonumber(h, 16)) end))
end
-- A v2 value as the fields of a v1 hash (nil when it is not a v2 record). `expire_at` (the key's
-- PEXPIRETIME, on the server's clock) dates an in-progress one: lease end = expire_at - ttl; one
-- without a native expiry (-1) reads as expired.
local function decode2(v, now, expire_at)
  local s, token, claimed, lease, ttl, expires, fp, n, rest =
    string.match(v, '^2(%a)|(%x+)|(%d*)|(%d+)|(%d+)|(%d*)|(%x*)|(%d+)|(.*)$')
  if not s then return nil end
  n = tonumber(n)
  local key, tenant = identity()
  local f = {v = '1', key = key, tenant = tenant, scope = string.sub(rest, 1, n), token = token,
    ttl_ms = ttl}
  if fp ~= '' then f['fingerprint'] = fp end
  if s == 'p' then
    local e = now
    if expire_at >= 0 then e = expire_at end
    f['state'] = 'in_progress'
    f['expires_at'] = fmt(e)
    f['lease_end'] = fmt(e - tonumber(ttl))
    f['claimed_at'] = fmt(e - tonumber(ttl) - tonumber(lease))
  else
    if not KINDS[s] then return nil end
    f['state'] = 'completed'
    f['claimed_at'] = claimed
    f['lease_end'] = fmt(tonumber(claimed) + tonumber(lease))
    f['expires_at'] = expires
    f['outcome'] = string.sub(rest, n + 1)
    f['outcome_kind'] = KINDS[s]
  end
  return f
end
-- The record at KEYS[1] as the fields of a v1 hash, whatever its format (v1 hash or v2 string),
-- or nil when there is none. A key of another type is an error, never a free key.
local function read(now)
  local v = redis.pcall('GET', KEYS[1])
  if v == false then return nil end
  if type(v) == 'string' then
    local f = decode2(v, now, redis.call('PEXPIRETIME', KEYS[1]))
    if not f then
      return redis.error_reply('idemkit: ' .. KEYS[1] .. ' is not an idemkit record')
    end
    return f
  end
  local flat = redis.call('HGETALL', KEYS[1])
  if #flat == 0 then return nil end
  return fields(flat)
end
local RECORD_FIELDS = {'v', 'key', 'tenant', 'scope', 'state', 'token', 'claimed_at', 'lease_end',
  'ttl_ms', 'expires_at', 'outcome', 'fingerprint', 'outcome_kind'}
-- A record's fields as the flat list HGETALL answers.
local function flat(f)
  local out = {}
  for _, name in ipairs(RECORD_FIELDS) do
    if f[name] then
      out[#out + 1] = name
      out[#out + 1] = f[name]
    end
  end
  return out
end
-- A record's fields as the values of one HMGET of RECORD_FIELDS (false where absent).
local function values(f)
  local out = {}
  for i, name in ipairs(RECORD_FIELDS) do out[i] = f[name] or false end
  return out
end
-- Writes the in-progress claim of `token` (v2), expiring natively at lease end + TTL.
local function write_claim(token, lease_ms, ttl_ms, fp, scope)
  local span = tonumber(lease_ms) + tonumber(ttl_ms)
  if span <= 0 then
    redis.call('DEL', KEYS[1])
    return
  end
  redis.call('SET', KEYS[1], encode2('p', token, '', lease_ms, ttl_ms, '', fp, scope, ''),
    'PX', fmt(span))
end
-- Completes the record `f` (found by `read`) with `outcome` of `kind`, kept `ttl_ms` from now (v2).
local function record_outcome(now, f, outcome, kind, ttl_ms)
  local ttl = tonumber(ttl_ms)
  if ttl <= 0 then
    redis.call('DEL', KEYS[1])
    return
  end
  local claimed = tonumber(f['claimed_at'])
  local lease = tonumber(f['lease_end']) - claimed
  redis.call('SET', KEYS[1], encode2(LETTERS[kind] or 'f', f['token'], fmt(claimed), fmt(lease),
    ttl_ms, fmt(now + ttl), f['fingerprint'], f['scope'], outcome), 'PX', ttl_ms)
end
