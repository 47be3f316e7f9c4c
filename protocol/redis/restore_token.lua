-- restore_token. KEYS token. ARGV ttl µs.
-- Reply: 1 restored · 0 invalid (absent or expired).

local ea = redis.call('HGET', KEYS[1], 'ea')
if not ea or tonumber(ea) <= now then return 0 end
ea = now + tonumber(ARGV[1])
redis.call('HSET', KEYS[1], 'c', '0', 'ea', s(ea))
redis.call('PEXPIREAT', KEYS[1], ms(ea))
return 1
