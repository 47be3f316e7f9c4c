-- extend. KEYS record, fence. ARGV fence, lease µs.
-- Reply: 1 extended · 0 fenced.
-- A live pending record with this fence gets lu = now + lease; ea keeps its distance to lu.

local r = redis.call('HMGET', KEYS[1], 'st', 'f', 'ea', 'lu')
if r[1] ~= 'p' or r[2] ~= ARGV[1] or tonumber(r[3]) <= now then return 0 end
local lu = now + tonumber(ARGV[2])
local ea = lu + (tonumber(r[3]) - tonumber(r[4]))
redis.call('HSET', KEYS[1], 'lu', s(lu), 'ea', s(ea))
redis.call('PEXPIREAT', KEYS[1], ms(ea))
redis.call('PEXPIREAT', KEYS[2], fence_ttl(ea))
return 1
