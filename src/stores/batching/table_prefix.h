// The table prefix of the SQL stores (postgres://, mysql:// ?table_prefix=), checked once for both.
#pragma once

#include <algorithm>
#include <string>

namespace idem::batching {

// A table prefix is safe to paste into SQL: [a-z_][a-z0-9_]*, at most 40 characters.
inline bool valid_table_prefix(const std::string& prefix) {
  if (prefix.empty() || prefix.size() > 40) return false;
  if (prefix[0] >= '0' && prefix[0] <= '9') return false;
  return std::all_of(prefix.begin(), prefix.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

}  // namespace idem::batching
