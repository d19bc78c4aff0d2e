-- Take-over of an abandoned claim (SPEC v1.1 rule 12): only an in-progress record whose lease
-- ended, still live and still held by the expected token moves to the new token.
local r = redis.call('HMGET', KEYS[1], 'state', 'token', 'lease_end', 'expires_at')
local now = now_ms()
if not r[4] then return {'lost', fmt(now)} end
if now >= tonumber(r[4]) then return {'lost', fmt(now)} end
if r[1] ~= 'in_progress' or r[2] ~= ARGV[1] or now < tonumber(r[3]) then
  return {'lost', fmt(now), redis.call('HGETALL', KEYS[1])}
end
local lease_end = now + tonumber(ARGV[3])
local expires_at = lease_end + tonumber(ARGV[4])
redis.call('HSET', KEYS[1], 'token', ARGV[2], 'claimed_at', fmt(now), 'lease_end', fmt(lease_end),
  'ttl_ms', ARGV[4], 'expires_at', fmt(expires_at))
redis.call('PEXPIREAT', KEYS[1], fmt(expires_at))
return {'acquired', fmt(now), fmt(lease_end)}
