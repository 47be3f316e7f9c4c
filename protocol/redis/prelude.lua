-- The start of every script: the server's clock and the helpers the scripts share. A script
-- sent to Redis is this file's body, a newline, and the operation's body (protocol/README.md,
-- "Files").
-- now: the server's TIME in µs since the Unix epoch, one reading per script (docs/design.md,
-- "The invariants in practice", I7).
-- s(n): a number as an integer string (%.0f: Lua numbers are doubles, exact below 2^53, where
-- fences and µs times live; no exponent ever reaches the server).
-- ms(us): µs rounded up to ms, for PEXPIREAT. fence_ttl(us): the expiry of a fence key, in ms:
-- a day past the record's (or lock's) expires_at.
-- next_fence(fence_key, stored): max(last fence of the fence key or the stored record's,
-- plus 1; now); nil past 2^53 - 1 (the script then answers the error "idem: fence space
-- exhausted").

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local function s(n) return string.format('%.0f', n) end
local function ms(us) return s(math.ceil(us / 1000)) end
local function fence_ttl(us) return s(math.ceil(us / 1000) + 86400000) end
local function next_fence(fence_key, stored)
  local prev = tonumber(redis.call('GET', fence_key) or '0')
  if stored and tonumber(stored) > prev then prev = tonumber(stored) end
  local f = math.max(prev + 1, now)
  if f > 9007199254740991 then return nil end
  return f
end
