-- get. KEYS record.
-- Reply: nil when absent or expired, else {st, fence, fp, lu or '', ea, res or '', owner or ''}
-- (every element a string).

local r = redis.call('HMGET', KEYS[1], 'st', 'f', 'fp', 'lu', 'ea', 'res', 'o')
if not r[1] or tonumber(r[5]) <= now then return false end
return {r[1], r[2], r[3], r[4] or '', r[5], r[6] or '', r[7] or ''}
