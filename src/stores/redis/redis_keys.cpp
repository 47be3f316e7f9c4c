#include "stores/redis/redis_keys.h"

#include <xxhash.h>

namespace idem::redis {
namespace {

// <prefix>{hash of tag_source}<kind>:<name>
std::string tagged(std::string_view prefix, std::string_view tag_source, std::string_view name,
                   std::string_view kind) {
  const std::uint64_t h = XXH3_64bits(tag_source.data(), tag_source.size());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(prefix.size() + 20 + kind.size() + name.size());
  out.append(prefix).push_back('{');
  for (int shift = 60; shift >= 0; shift -= 4) out.push_back(kHex[(h >> shift) & 15]);
  out.push_back('}');
  out.append(kind).push_back(':');
  out.append(name);
  return out;
}

std::string scoped(std::string_view scope, std::string_view name) {
  std::string out = std::to_string(scope.size());
  out.push_back(':');
  out.append(scope).append(name);
  return out;
}

// What places a record or token: its scope and the part of its key after the last ':'.
std::string slot_source(std::string_view scope, std::string_view key) {
  const auto colon = key.rfind(':');
  return scoped(scope, colon == std::string_view::npos ? key : key.substr(colon + 1));
}

}  // namespace

KeyPair record_keys(std::string_view prefix, std::string_view scope, std::string_view key) {
  const std::string name = scoped(scope, key), source = slot_source(scope, key);
  return {tagged(prefix, source, name, "r"), tagged(prefix, source, name, "rf")};
}

std::string token_key(std::string_view prefix, std::string_view scope, std::string_view token) {
  return tagged(prefix, slot_source(scope, token), scoped(scope, token), "t");
}

KeyPair lock_keys(std::string_view prefix, std::string_view name) {
  return {tagged(prefix, name, name, "l"), tagged(prefix, name, name, "lf")};
}

bool same_slot(std::string_view scope, std::string_view key, std::string_view token) {
  return key_slot(record_keys("", scope, key).main) == key_slot(token_key("", scope, token));
}

std::string glob_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

std::string record_pattern(std::string_view prefix, const std::optional<std::string>& scope,
                           std::string_view key_prefix) {
  std::string out = glob_escape(prefix);
  out += "{????????????????}r:";
  if (scope) out += std::to_string(scope->size()) + ":" + glob_escape(*scope) + glob_escape(key_prefix);
  out.push_back('*');
  return out;
}

bool parse_record_key(std::string_view prefix, std::string_view redis_key, std::string& scope,
                      std::string& key) {
  constexpr std::size_t kTagged = 1 + 16 + 1 + 2;  // {<16 hex>}r:
  if (!redis_key.starts_with(prefix) || redis_key.size() < prefix.size() + kTagged) return false;
  std::string_view name = redis_key.substr(prefix.size() + kTagged);
  const auto colon = name.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > 10) return false;
  std::size_t scope_size = 0;
  for (char c : name.substr(0, colon)) {
    if (c < '0' || c > '9') return false;
    scope_size = scope_size * 10 + static_cast<std::size_t>(c - '0');
  }
  name.remove_prefix(colon + 1);
  if (scope_size >= name.size()) return false;  // the key is never empty
  scope.assign(name.substr(0, scope_size));
  key.assign(name.substr(scope_size));
  // The whole key, tag included, as record_keys writes it: nothing else passes.
  return record_keys(prefix, scope, key).main == redis_key;
}

int key_slot(std::string_view key) noexcept {
  // The tag: between the first '{' and the next '}', when not empty.
  if (const auto open = key.find('{'); open != std::string_view::npos) {
    const auto close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) key = key.substr(open + 1, close - open - 1);
  }
  std::uint16_t crc = 0;
  for (unsigned char c : key) {
    crc ^= static_cast<std::uint16_t>(c << 8);
    for (int i = 0; i < 8; ++i) {
      crc = (crc & 0x8000) ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<std::uint16_t>(crc << 1);
    }
  }
  return crc & (kSlots - 1);
}

}  // namespace idem::redis
