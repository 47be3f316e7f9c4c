-- abandon. KEYS record. ARGV owner (not empty).
-- Reply: 1 released · 0 fenced.
-- A live pending record of this owner is deleted, its lease live or not.

local r = redis.call('HMGET', KEYS[1], 'st', 'o', 'ea')
if r[1] ~= 'p' or r[2] ~= ARGV[1] or tonumber(r[3]) <= now then return 0 end
redis.call('DEL', KEYS[1])
return 1
