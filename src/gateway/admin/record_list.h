// Listing records for operators (docs/admin.md, "Listing records"): the one list that
// `GET /v1/records?...` and `idem record list` print, so both agree. The store pages
// (Store::list); this adds the key space, the `uncertain` filter (done records holding the
// gateway's uncertain marker) and the JSON. Pure; safe for concurrent use.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "idem/listing.h"
#include "idem/status.h"

namespace idem::gateway {

struct ListRequest {
  ListArgs args;           // key_prefix "<key_space>:" when a key space is named
  bool uncertain = false;  // only done records whose result is the uncertain marker
};

// The parameters of GET /v1/records: key_space, state (pending|done), uncertain
// (true|false), scope (exact; "scope=" is the empty scope), limit (1-1000, default 100)
// and cursor. A parameter given with an invalid value → invalid_argument naming it.
Result<ListRequest> parse_list_query(std::string_view query);

// The same from the command line's values ("" where a flag was not given).
Result<ListRequest> make_list_request(std::string_view key_space, std::string_view state, bool uncertain,
                                      std::optional<std::size_t> limit, std::string cursor);

// True for a done record whose stored result is the gateway's uncertain marker.
bool is_uncertain(const Record& r);

// Gathers one answer from store pages: ask next() for the arguments of the next store call
// until it says the answer is complete, add() each page, then render json(). Filtering
// `uncertain` may leave a page short: it asks again, for as many records as are missing,
// at most kMaxStoreCalls times per answer; a short answer with a next_cursor is normal.
class ListCollector {
 public:
  static constexpr int kMaxStoreCalls = 16;

  explicit ListCollector(ListRequest request);

  std::optional<ListArgs> next() const;
  void add(ListPage page);

  // {"records":[...],"next_cursor":"..."}: records as GET /v1/records/{scope}/{key} shows
  // them; next_cursor is "" once the listing is complete.
  std::string json() const;

 private:
  ListRequest request_;
  std::vector<Record> records_;
  std::string cursor_;
  int calls_ = 0;
  bool done_ = false;
};

}  // namespace idem::gateway
