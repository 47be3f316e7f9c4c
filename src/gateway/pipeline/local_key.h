// The one string that names a record in the gateway's in-process maps (the waiters, the
// flights of duplicates, the replay cache): its scope, a NUL, its key. A scope never holds
// a NUL (it is a header value, its hash, or empty), so two records never share a name.
// Pure.
#pragma once

#include <string>
#include <string_view>

namespace idem::gateway {

inline std::string local_key(std::string_view scope, std::string_view key) {
  std::string s;
  s.reserve(scope.size() + key.size() + 1);
  s.append(scope).push_back('\0');
  s.append(key);
  return s;
}

}  // namespace idem::gateway
