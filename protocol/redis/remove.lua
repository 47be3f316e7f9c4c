-- remove (an operator's delete). KEYS record.
-- Reply: 1 when a live record went · 0.

local ea = redis.call('HGET', KEYS[1], 'ea')
if not ea then return 0 end
redis.call('DEL', KEYS[1])
if tonumber(ea) <= now then return 0 end
return 1
