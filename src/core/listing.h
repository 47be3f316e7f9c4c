// The parts of Store::list (idem/listing.h) that every backend shares: checking the
// arguments, the filters, and the keyset cursor of the stores that order their pages
// newest first (memory, SQLite, PostgreSQL, MySQL). Pure; safe for concurrent use.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "idem/listing.h"
#include "idem/status.h"

namespace idem::core {

// invalid_argument unless 1 <= limit <= kMaxListLimit.
Status validate(const ListArgs& a);

// Whether the record passes the scope, key prefix and state filters (not expiry).
bool matches(const Record& r, const ListArgs& a);

// Where a page ended in newest-first order: the last record shown. The next page starts
// after it: expires_at earlier, or equal and (scope, key) greater, bytewise.
struct ListPosition {
  TimePoint expires_at{};
  std::string scope;
  std::string key;
};

// The order of a newest-first listing: true when `a` is shown before `b`.
bool shown_before(const Record& a, const Record& b);
// True when `r` comes after the position (belongs to a later page).
bool after(const Record& r, const ListPosition& p);

// The position as an opaque cursor (hex text), and back: nullopt for "" (the first page);
// invalid_argument for anything encode_position did not write.
std::string encode_position(const Record& last);
Result<std::optional<ListPosition>> decode_position(std::string_view cursor);

// The page from `rows`, fetched in order with limit + 1 rows at most: the first `limit`,
// and a cursor after the last of them when a further row showed that more follow.
ListPage make_page(std::vector<Record> rows, std::size_t limit);

// The least string greater than every string that starts with `prefix` (bytewise), for a
// range condition key >= prefix AND key < end; nullopt when there is none (all 0xff).
std::optional<std::string> prefix_end(std::string_view prefix);

}  // namespace idem::core
