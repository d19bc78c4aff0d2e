-- Take-over of an abandoned claim (SPEC v1.1 rule 12): only an in-progress record whose lease
-- ended, still live and still held by the expected token moves to the new token (written v2).
local now = now_ms()
local f = read(now)
if f and f['err'] then return f end
if not f or not f['expires_at'] then return {'lost', fmt(now)} end
if now >= tonumber(f['expires_at']) then return {'lost', fmt(now)} end
if f['state'] ~= 'in_progress' or f['token'] ~= ARGV[1] or now < tonumber(f['lease_end']) then
  return {'lost', fmt(now), flat(f)}
end
write_claim(ARGV[2], ARGV[3], ARGV[4], f['fingerprint'], f['scope'])
return {'acquired', fmt(now), fmt(now + tonumber(ARGV[3]))}
