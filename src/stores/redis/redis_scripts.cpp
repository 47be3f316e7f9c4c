// Fences: a record's or lock's fence key keeps the last fence handed out for its name and
// outlives the record (or lock) by a day. A new fence is max(previous + 1, server µs), so
// it is greater than every fence handed out while the fence key lived; once the key is
// gone (a day without any acquisition), the server's clock has long passed every earlier
// fence — unless the clock stepped back by more than a day, the one exception docs/design.md I2
// allows. Numbers are Lua doubles: exact below 2^53, which is where fences and µs times
// live; they are written with %.0f so that no exponent notation reaches the server.
#include "stores/redis/redis_scripts.h"

#include <openssl/sha.h>

#include "util/hex.h"

namespace idem::redis {
namespace {

constexpr const char* kPrelude = R"lua(
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
)lua";

// KEYS record, fence. ARGV fingerprint, lease µs, retention µs, owner.
// {0, fence, recovered, previous fence or 0} acquired · {1, fence, result, expires_in µs} replay ·
// {2, retry µs} in_progress · {3} mismatch
constexpr const char* kBegin = R"lua(
local r = redis.call('HMGET', KEYS[1], 'st', 'f', 'fp', 'lu', 'ea')
local fp = ARGV[1]
local recovered, previous = 0, 0
if r[1] and tonumber(r[5]) > now then
  if r[3] ~= '' and fp ~= '' and r[3] ~= fp then return {3} end
  if r[1] == 'd' then return {1, tonumber(r[2]), redis.call('HGET', KEYS[1], 'res'), tonumber(r[5]) - now} end
  local lu = tonumber(r[4])
  if now < lu then return {2, lu - now} end
  recovered, previous = 1, tonumber(r[2])
  if fp == '' then fp = r[3] end
end
local fence = next_fence(KEYS[2], r[2])
if not fence then return redis.error_reply('idem: fence space exhausted') end
local lu = now + tonumber(ARGV[2])
local ea = lu + tonumber(ARGV[3])
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'st', 'p', 'f', s(fence), 'fp', fp, 'lu', s(lu), 'ea', s(ea), 'o', ARGV[4])
redis.call('PEXPIREAT', KEYS[1], ms(ea))
redis.call('SET', KEYS[2], s(fence), 'PXAT', fence_ttl(ea))
return {0, fence, recovered, previous}
)lua";

// KEYS record, fence. ARGV fence, result, retention µs, over_uncertain. 1 committed · 0 fenced.
// Done with this fence: a retried commit, committed without a change. Done with another fence
// and a result that starts with a non-empty over_uncertain: replaced, this fence and all.
constexpr const char* kCommit = R"lua(
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
redis.call('PEXPIREAT', KEYS[1], ms(ea))
redis.call('PEXPIREAT', KEYS[2], fence_ttl(ea))
return 1
)lua";

// KEYS record[, token]. ARGV fence[, ttl µs]. 1 released · 0 fenced. With a token: when
// released, the token (if live) is re-armed for ttl, as by restore_token.
constexpr const char* kRelease = R"lua(
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
)lua";

// KEYS record. ARGV owner (not empty). 1 released · 0 fenced
constexpr const char* kAbandon = R"lua(
local r = redis.call('HMGET', KEYS[1], 'st', 'o', 'ea')
if r[1] ~= 'p' or r[2] ~= ARGV[1] or tonumber(r[3]) <= now then return 0 end
redis.call('DEL', KEYS[1])
return 1
)lua";

// KEYS record, fence. ARGV fence, lease µs. 1 extended · 0 fenced
constexpr const char* kExtend = R"lua(
local r = redis.call('HMGET', KEYS[1], 'st', 'f', 'ea', 'lu')
if r[1] ~= 'p' or r[2] ~= ARGV[1] or tonumber(r[3]) <= now then return 0 end
local lu = now + tonumber(ARGV[2])
local ea = lu + (tonumber(r[3]) - tonumber(r[4]))
redis.call('HSET', KEYS[1], 'lu', s(lu), 'ea', s(ea))
redis.call('PEXPIREAT', KEYS[1], ms(ea))
redis.call('PEXPIREAT', KEYS[2], fence_ttl(ea))
return 1
)lua";

// KEYS record. nil when absent or expired, else {st, fence, fp, lu or '', ea, res or '', owner or ''}
constexpr const char* kGet = R"lua(
local r = redis.call('HMGET', KEYS[1], 'st', 'f', 'fp', 'lu', 'ea', 'res', 'o')
if not r[1] or tonumber(r[5]) <= now then return false end
return {r[1], r[2], r[3], r[4] or '', r[5], r[6] or '', r[7] or ''}
)lua";

// KEYS record. 1 when a live record went · 0
constexpr const char* kRemove = R"lua(
local ea = redis.call('HGET', KEYS[1], 'ea')
if not ea then return 0 end
redis.call('DEL', KEYS[1])
if tonumber(ea) <= now then return 0 end
return 1
)lua";

// KEYS token. ARGV ttl µs. 1
constexpr const char* kIssueToken = R"lua(
local ea = now + tonumber(ARGV[1])
redis.call('HSET', KEYS[1], 'c', '0', 'ttl', ARGV[1], 'ea', s(ea))
redis.call('PEXPIREAT', KEYS[1], ms(ea))
return 1
)lua";

// KEYS token. 1 consumed · 0 invalid. A consumed token stays restorable for another ttl.
constexpr const char* kConsumeToken = R"lua(
local r = redis.call('HMGET', KEYS[1], 'c', 'ttl', 'ea')
if r[1] ~= '0' or tonumber(r[3]) <= now then return 0 end
local ea = math.max(tonumber(r[3]), now + tonumber(r[2]))
redis.call('HSET', KEYS[1], 'c', '1', 'ea', s(ea))
redis.call('PEXPIREAT', KEYS[1], ms(ea))
return 1
)lua";

// KEYS token. ARGV ttl µs. 1 restored · 0 invalid
constexpr const char* kRestoreToken = R"lua(
local ea = redis.call('HGET', KEYS[1], 'ea')
if not ea or tonumber(ea) <= now then return 0 end
ea = now + tonumber(ARGV[1])
redis.call('HSET', KEYS[1], 'c', '0', 'ea', s(ea))
redis.call('PEXPIREAT', KEYS[1], ms(ea))
return 1
)lua";

// KEYS lock, fence. ARGV owner, ttl µs. {0, fence} locked · {1, retry µs} busy
constexpr const char* kLock = R"lua(
local r = redis.call('HMGET', KEYS[1], 'o', 'f', 'ea')
local ea = now + tonumber(ARGV[2])
if r[1] and tonumber(r[3]) > now then
  if r[1] ~= ARGV[1] then return {1, tonumber(r[3]) - now} end
  redis.call('HSET', KEYS[1], 'ea', s(ea))
  redis.call('PEXPIREAT', KEYS[1], ms(ea))
  redis.call('PEXPIREAT', KEYS[2], fence_ttl(ea))
  return {0, tonumber(r[2])}
end
local fence = next_fence(KEYS[2], r[2])
if not fence then return redis.error_reply('idem: fence space exhausted') end
redis.call('HSET', KEYS[1], 'o', ARGV[1], 'f', s(fence), 'ea', s(ea))
redis.call('PEXPIREAT', KEYS[1], ms(ea))
redis.call('SET', KEYS[2], s(fence), 'PXAT', fence_ttl(ea))
return {0, fence}
)lua";

// KEYS lock. ARGV owner. 1 released · 0 not_owner
constexpr const char* kUnlock = R"lua(
local r = redis.call('HMGET', KEYS[1], 'o', 'ea')
if r[1] ~= ARGV[1] or tonumber(r[2]) <= now then return 0 end
redis.call('DEL', KEYS[1])
return 1
)lua";

// KEYS lock, fence. ARGV owner, ttl µs. 1 extended · 0 not_owner
constexpr const char* kExtendLock = R"lua(
local r = redis.call('HMGET', KEYS[1], 'o', 'ea')
if r[1] ~= ARGV[1] or tonumber(r[2]) <= now then return 0 end
local ea = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'ea', s(ea))
redis.call('PEXPIREAT', KEYS[1], ms(ea))
redis.call('PEXPIREAT', KEYS[2], fence_ttl(ea))
return 1
)lua";

Script make(const char* name, const char* body) {
  Script s{name, std::string(kPrelude) + body, {}};
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(s.text.data()), s.text.size(), digest);
  s.sha1 = util::to_hex(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
  return s;
}

}  // namespace

const Scripts& scripts() {
  static const Scripts kScripts{
      make("begin", kBegin),
      make("commit", kCommit),
      make("release", kRelease),
      make("abandon", kAbandon),
      make("extend", kExtend),
      make("get", kGet),
      make("remove", kRemove),
      make("issue_token", kIssueToken),
      make("consume_token", kConsumeToken),
      make("restore_token", kRestoreToken),
      make("lock", kLock),
      make("unlock", kUnlock),
      make("extend_lock", kExtendLock),
  };
  return kScripts;
}

}  // namespace idem::redis
