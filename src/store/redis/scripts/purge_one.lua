if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' then return 0 end
local e = redis.call('HGET', KEYS[1], 'expires_at')
if e and now_ms() >= tonumber(e) then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
