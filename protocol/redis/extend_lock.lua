-- extend_lock. KEYS lock, fence. ARGV owner, ttl µs.
-- Reply: 1 extended · 0 not_owner.

local r = redis.call('HMGET', KEYS[1], 'o', 'ea')
if r[1] ~= ARGV[1] or tonumber(r[2]) <= now then return 0 end
local ea = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'ea', s(ea))
redis.call('PEXPIREAT', KEYS[1], ms(ea))
redis.call('PEXPIREAT', KEYS[2], fence_ttl(ea))
return 1
