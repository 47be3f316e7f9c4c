// Where the store keeps things in Redis. Every key is
//   <prefix>{<tag>}<kind>:<name>
// where <tag> is 16 hex digits of a hash: Redis Cluster places a key by its {hash tag}, so
// the keys one script touches (a record and its fence key, a lock and its fence key)
// always share a slot, while different names spread over the cluster. The name after the
// tag keeps keys distinct even when two tags collide. A scope may hold any byte, so it is
// written with its length in front: <scope length>:<scope><key>.
//
// A lock's tag hashes its name. A record's or token's tag hashes its scope and the part of
// its key after the last ':' only, so that a record keyed "<space>:<token>" (the gateway's
// token mode) shares the slot of the token (scope, "<token>"), and a release can restore
// that token in the same script (ReleaseArgs::restore_token).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace idem::redis {

struct KeyPair {
  std::string main;   // the record, token or lock
  std::string fence;  // the last fence handed out for it (records and locks)
};

KeyPair record_keys(std::string_view prefix, std::string_view scope, std::string_view key);
std::string token_key(std::string_view prefix, std::string_view scope, std::string_view token);
KeyPair lock_keys(std::string_view prefix, std::string_view name);

// Listing (SCAN): a MATCH pattern that every record key of `scope` (any scope when nullopt)
// whose key starts with `key_prefix` matches (and few others: callers parse what comes
// back); and the scope and key of a record key, false for any other key.
std::string record_pattern(std::string_view prefix, const std::optional<std::string>& scope,
                           std::string_view key_prefix);
bool parse_record_key(std::string_view prefix, std::string_view redis_key, std::string& scope,
                      std::string& key);
// `text` matched literally by a MATCH pattern: each of * ? [ ] \ escaped by a backslash.
std::string glob_escape(std::string_view text);

inline constexpr int kSlots = 16384;
// Redis Cluster's slot for a key: CRC16 (XMODEM) of its hash tag, or of the whole key.
int key_slot(std::string_view key) noexcept;
// True when the record (scope, key) and the token (scope, token) share a slot.
bool same_slot(std::string_view scope, std::string_view key, std::string_view token);

}  // namespace idem::redis
