-- unlock. KEYS lock. ARGV owner.
-- Reply: 1 released · 0 not_owner.

local r = redis.call('HMGET', KEYS[1], 'o', 'ea')
if r[1] ~= ARGV[1] or tonumber(r[2]) <= now then return 0 end
redis.call('DEL', KEYS[1])
return 1
