-- consume_token. KEYS token.
-- Reply: 1 consumed · 0 invalid (absent, expired or already consumed).
-- A consumed token stays restorable for another ttl.

local r = redis.call('HMGET', KEYS[1], 'c', 'ttl', 'ea')
if r[1] ~= '0' or tonumber(r[3]) <= now then return 0 end
local ea = math.max(tonumber(r[3]), now + tonumber(r[2]))
redis.call('HSET', KEYS[1], 'c', '1', 'ea', s(ea))
redis.call('PEXPIREAT', KEYS[1], ms(ea))
return 1
