-- release. KEYS record[, token]. ARGV fence[, ttl µs].
-- Reply: 1 released · 0 fenced.
-- A live pending record with this fence is deleted. With a token: when released, the token (if
-- live) is re-armed for ttl, as by restore_token.

local r = redis.call('HMGET', KEYS[1], 'st', 'f', 'ea')
if r[1] ~= 'p' or r[2] ~= ARGV[1] or tonumber(r[3]) <= now then return 0 end
redis.call('DEL', KEYS[1])
if KEYS[2] then
  local ea = redis.call('HGET', KEYS[2], 'ea')
  if ea and tonumber(ea) > now then
    ea = now + tonumber(ARGV[2])
    redis.call('HSET', KEYS[2], 'c', '0', 'ea', s(ea))
    redis.call('PEXPIREAT', KEYS[2], ms(ea))
  end
end
return 1
