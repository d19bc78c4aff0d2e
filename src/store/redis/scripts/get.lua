local now = now_ms()
local f = read(now)
if f and f['err'] then return f end
if f then
  local alive = live(f, now)
  if type(alive) == 'table' then return alive end
  if alive then return {fmt(now), flat(f)} end
end
return {fmt(now), {}}
