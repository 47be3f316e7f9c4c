-- commit. KEYS record, fence. ARGV fence, result, retention µs, over_uncertain.
-- Reply: 1 committed · 0 fenced.
-- A live pending record with this fence becomes done (result, expires_at = now + retention).
-- Done with this fence: a retried commit, committed without a change. Done with another fence
-- and a result that starts with a non-empty over_uncertain: replaced, this fence and all.
-- The native expiries move only when expires_at grows (a commit after the lease ran out, or with
-- a longer retention): a commit within the lease leaves the record's native expiry where begin or
-- extend put it (lease_until + retention, at most a lease past the new expires_at, which rules),
-- and the fence key a day past that.

local r = redis.call('HMGET', KEYS[1], 'st', 'f', 'ea')
if not r[1] or tonumber(r[3]) <= now then return 0 end
if r[1] == 'd' then
  if r[2] == ARGV[1] then return 1 end
  local over = ARGV[4]
  if over == '' or string.sub(redis.call('HGET', KEYS[1], 'res'), 1, #over) ~= over then return 0 end
elseif r[2] ~= ARGV[1] then
  return 0
end
local ea = now + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'st', 'd', 'f', ARGV[1], 'res', ARGV[2], 'ea', s(ea))
redis.call('HDEL', KEYS[1], 'lu')
if ea > tonumber(r[3]) then
  redis.call('PEXPIREAT', KEYS[1], ms(ea))
  redis.call('PEXPIREAT', KEYS[2], fence_ttl(ea))
end
return 1
