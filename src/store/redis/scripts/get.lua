local now = now_ms()
local flat = redis.call('HGETALL', KEYS[1])
if #flat > 0 then
  local alive = live(fields(flat), now)
  if type(alive) == 'table' then return alive end
  if not alive then flat = {} end
end
return {fmt(now), flat}
