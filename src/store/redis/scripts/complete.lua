local now = now_ms()
-- The common case, read without decoding the record: a v2 claim in progress under this token
-- (`2p|<token>||lease|ttl||fingerprint|n|scope`), live (its native expiry, lease end + TTL, is
-- ahead). Its completed value keeps everything after `ttl||` and appends the outcome.
local v = redis.pcall('GET', KEYS[1])
if type(v) == 'string' then
  local t = ARGV[1]
  local head = '2p|' .. t .. '||'
  if string.sub(v, 1, #head) == head then
    local lease, ttl, tail = string.match(v, '^(%d+)|(%d+)||(.*)$', #head + 1)
    local e = redis.call('PEXPIRETIME', KEYS[1])
    if lease and e >= 0 and now < e then
      if tonumber(ARGV[4]) <= 0 then
        redis.call('DEL', KEYS[1])
      else
        redis.call('SET', KEYS[1], '2' .. (LETTERS[ARGV[3]] or 'f') .. '|' .. t .. '|'
          .. fmt(e - tonumber(ttl) - tonumber(lease)) .. '|' .. lease .. '|' .. ARGV[4] .. '|'
          .. fmt(now + tonumber(ARGV[4])) .. '|' .. tail .. ARGV[2], 'PX', ARGV[4])
      end
      return {'recorded', fmt(now)}
    end
  end
end
-- Anything else (a v1 hash, another token, a completed or expired record): read whole.
local f = read(now)
if f and f['err'] then return f end
if not f or not f['expires_at'] or now >= tonumber(f['expires_at']) then
  return {'not_owner', fmt(now)}
end
if f['token'] ~= ARGV[1] then return {'not_owner', fmt(now), flat(f)} end
if f['state'] == 'in_progress' then
  record_outcome(now, f, ARGV[2], ARGV[3], ARGV[4])
end
return {'recorded', fmt(now)}
