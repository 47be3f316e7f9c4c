// Listing records (docs/admin.md, "Listing records"): the arguments and the page of
// Store::list.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "idem/record.h"

namespace idem {

inline constexpr std::size_t kDefaultListLimit = 100;
inline constexpr std::size_t kMaxListLimit = 1000;

struct ListArgs {
  std::string key_prefix;                 // only keys starting with these bytes; empty: every key
  std::optional<std::string> scope;       // only this scope (exactly; "" is the empty scope)
  std::optional<RecordState> state;       // only records in this state
  std::size_t limit = kDefaultListLimit;  // 1..kMaxListLimit records at most per page
  std::string cursor;                     // the previous page's next_cursor; empty: the first page
};

struct ListPage {
  std::vector<Record> records;  // live records only, as get() returns them
  std::string next_cursor;      // pass to the next call; empty: the listing is complete
};

}  // namespace idem
