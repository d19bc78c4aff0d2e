local now = now_ms()
local f = read(now)
if f and f['err'] then return f end
if not f then return {'not_found', fmt(now)} end
local alive = live(f, now)
if type(alive) == 'table' then return alive end
if not alive then return {'not_found', fmt(now)} end
-- A held failure (outcome_kind 'indeterminate') waits for an operator like an abandoned claim.
if f['state'] == 'completed' and f['outcome_kind'] ~= 'indeterminate' then
  return {'already_completed', fmt(now), flat(f)}
end
if f['token'] ~= ARGV[1] then return {'token_mismatch', fmt(now), flat(f)} end
if ARGV[2] == 'release' then
  redis.call('DEL', KEYS[1])
else
  record_outcome(now, f, ARGV[3], ARGV[4], ARGV[5])
end
return {'done', fmt(now)}
