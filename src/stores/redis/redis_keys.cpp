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
