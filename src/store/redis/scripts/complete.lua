local now = now_ms()
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
