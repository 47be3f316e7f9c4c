-- lock. KEYS lock, fence. ARGV owner, ttl µs.
-- Reply: {0, fence} locked · {1, retry_after µs} busy.
-- The same owner again keeps its fence (and gets ea = now + ttl); a free or expired lock is
-- taken with a new fence.

local r = redis.call('HMGET', KEYS[1], 'o', 'f', 'ea')
local ea = now + tonumber(ARGV[2])
if r[1] and tonumber(r[3]) > now then
  if r[1] ~= ARGV[1] then return {1, tonumber(r[3]) - now} end
  redis.call('HSET', KEYS[1], 'ea', s(ea))
  redis.call('PEXPIREAT', KEYS[1], ms(ea))
  redis.call('PEXPIREAT', KEYS[2], fence_ttl(ea))
  return {0, tonumber(r[2])}
end
local fence = next_fence(KEYS[2], r[2])
if not fence then return redis.error_reply('idem: fence space exhausted') end
redis.call('HSET', KEYS[1], 'o', ARGV[1], 'f', s(fence), 'ea', s(ea))
redis.call('PEXPIREAT', KEYS[1], ms(ea))
redis.call('SET', KEYS[2], s(fence), 'PXAT', fence_ttl(ea))
return {0, fence}
