// The Lua scripts behind every Redis store operation: each operation is one script, run
// atomically by the server in one round trip (EVALSHA; EVAL when the server lost its
// script cache). Times are the server's (`TIME`, microseconds), so every gateway sharing a
// Redis judges leases by one clock (docs/design.md I7); keys carry native TTLs (PEXPIREAT), so
// nothing needs sweeping.
//
// Keys (redis_keys.h) and what each holds:
//   record  hash {st = p|d, f = fence, fp, lu = lease_until µs (pending), ea = expires_at µs, res,
//                 o = owner (absent in records written before owners existed: none)}
//   fence   string: the last fence handed out for the key (also for a lock name)
//   token   hash {c = 0|1 (consumed), ttl µs as issued, ea µs}
//   lock    hash {o = owner, f = fence, ea µs}
// Each script's KEYS, ARGV and reply are in the header of its file, protocol/redis/<name>.lua.
#pragma once

#include <string>

namespace idem::redis {

struct Script {
  const char* name;
  std::string text;
  std::string sha1;  // lowercase hex, as EVALSHA wants it
};

struct Scripts {
  Script begin, commit, release, abandon, extend, get, remove;
  Script issue_token, consume_token, restore_token;
  Script lock, unlock, extend_lock;
};

// Built once per process.
const Scripts& scripts();

}  // namespace idem::redis
