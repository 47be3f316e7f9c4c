-- begin. KEYS record, fence. ARGV fingerprint, lease µs, retention µs, owner.
-- Reply: {0, fence, recovered 0|1, previous fence or 0} acquired ·
--        {1, fence, result, expires_in µs} replay · {2, retry_after µs} in_progress · {3} mismatch
-- A live record (ea > now) is checked in order: mismatch (both fingerprints non-empty and
-- different), replay (done), in_progress (lease live); otherwise (absent, expired, or a pending
-- record whose lease ran out: recovered, and previous = its fence) it is acquired with a new
-- fence. A takeover with an empty fingerprint keeps the stored one.

local r = redis.call('HMGET', KEYS[1], 'st', 'f', 'fp', 'lu', 'ea')
local fp = ARGV[1]
local recovered, previous = 0, 0
if r[1] and tonumber(r[5]) > now then
  if r[3] ~= '' and fp ~= '' and r[3] ~= fp then return {3} end
  if r[1] == 'd' then return {1, tonumber(r[2]), redis.call('HGET', KEYS[1], 'res'), tonumber(r[5]) - now} end
  local lu = tonumber(r[4])
  if now < lu then return {2, lu - now} end
  recovered, previous = 1, tonumber(r[2])
  if fp == '' then fp = r[3] end
end
local fence = next_fence(KEYS[2], r[2])
if not fence then return redis.error_reply('idem: fence space exhausted') end
local lu = now + tonumber(ARGV[2])
local ea = lu + tonumber(ARGV[3])
if r[1] then redis.call('DEL', KEYS[1]) end
redis.call('HSET', KEYS[1], 'st', 'p', 'f', s(fence), 'fp', fp, 'lu', s(lu), 'ea', s(ea), 'o', ARGV[4])
redis.call('PEXPIREAT', KEYS[1], ms(ea))
redis.call('SET', KEYS[2], s(fence), 'PXAT', fence_ttl(ea))
return {0, fence, recovered, previous}
