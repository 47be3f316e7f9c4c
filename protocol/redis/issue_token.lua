-- issue_token. KEYS token. ARGV ttl µs.
-- Reply: 1.

local ea = now + tonumber(ARGV[1])
redis.call('HSET', KEYS[1], 'c', '0', 'ttl', ARGV[1], 'ea', s(ea))
redis.call('PEXPIREAT', KEYS[1], ms(ea))
return 1
