#include "gateway/admin/record_list.h"

#include <charconv>

#include <boost/json.hpp>

#include "gateway/admin/record_json.h"
#include "gateway/model/request_view.h"
#include "gateway/model/route.h"
#include "gateway/model/stored_result.h"

namespace idem::gateway {

Result<ListRequest> make_list_request(std::string_view key_space, std::string_view state, bool uncertain,
                                      std::optional<std::size_t> limit, std::string cursor) {
  ListRequest out;
  if (!key_space.empty()) {
    if (!is_key_space(key_space))
      return invalid_argument("key_space is 1-64 letters, digits, '-', '_' and '.'");
    out.args.key_prefix = stored_key(key_space, "");
  }
  if (state == "pending") {
    out.args.state = RecordState::pending;
  } else if (state == "done") {
    out.args.state = RecordState::done;
  } else if (!state.empty()) {
    return invalid_argument("state is pending or done");
  }
  out.uncertain = uncertain;
  // `uncertain` is a kind of done record.
  if (uncertain && out.args.state == RecordState::pending)
    return invalid_argument("uncertain records are done, not pending");
  if (limit) {
    if (*limit < 1 || *limit > kMaxListLimit)
      return invalid_argument("limit is from 1 to " + std::to_string(kMaxListLimit));
    out.args.limit = *limit;
  }
  out.args.cursor = std::move(cursor);
  return out;
}

Result<ListRequest> parse_list_query(std::string_view query) {
  auto param = [&](const char* name) { return find_form_value(query, name); };
  const auto key_space = param("key_space");
  if (key_space && key_space->empty())
    return invalid_argument("key_space is 1-64 letters, digits, '-', '_' and '.'");
  const auto state = param("state");
  if (state && state->empty()) return invalid_argument("state is pending or done");
  bool uncertain = false;
  if (const auto u = param("uncertain")) {
    if (*u != "true" && *u != "false") return invalid_argument("uncertain is true or false");
    uncertain = *u == "true";
  }
  std::optional<std::size_t> limit;
  if (const auto l = param("limit")) {
    std::size_t n = 0;
    const auto [end, ec] = std::from_chars(l->data(), l->data() + l->size(), n);
    if (l->empty() || ec != std::errc() || end != l->data() + l->size() || n < 1 || n > kMaxListLimit)
      return invalid_argument("limit is from 1 to " + std::to_string(kMaxListLimit));
    limit = n;
  }
  auto out = make_list_request(key_space.value_or(""), state.value_or(""), uncertain, limit,
                               param("cursor").value_or(""));
  if (out) out->args.scope = param("scope");
  return out;
}

bool is_uncertain(const Record& r) {
  if (r.state != RecordState::done) return false;
  Result<StoredResult> s = decode_stored_result(r.result);
  return s && s->kind == StoredResult::Kind::uncertain;
}

ListCollector::ListCollector(ListRequest request) : request_(std::move(request)) {
  if (request_.uncertain) request_.args.state = RecordState::done;
  cursor_ = request_.args.cursor;
}

std::optional<ListArgs> ListCollector::next() const {
  if (done_ || records_.size() >= request_.args.limit || calls_ >= kMaxStoreCalls) return std::nullopt;
  ListArgs a = request_.args;
  a.limit -= records_.size();
  a.cursor = cursor_;
  return a;
}

void ListCollector::add(ListPage page) {
  ++calls_;
  for (Record& r : page.records) {
    if (!request_.uncertain || is_uncertain(r)) records_.push_back(std::move(r));
  }
  cursor_ = std::move(page.next_cursor);
  done_ = cursor_.empty();
}

std::string ListCollector::json() const {
  std::string out = "{\"records\":[";
  for (std::size_t i = 0; i < records_.size(); ++i) {
    if (i > 0) out += ',';
    out += record_json(records_[i]);
  }
  out += "],\"next_cursor\":";
  out += boost::json::serialize(boost::json::value(boost::json::string(cursor_)));
  out += '}';
  return out;
}

}  // namespace idem::gateway
