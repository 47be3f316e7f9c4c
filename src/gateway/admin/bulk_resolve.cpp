#include "gateway/admin/bulk_resolve.h"

#include <boost/json.hpp>

#include "gateway/admin/record_list.h"
#include "gateway/model/route.h"
#include "gateway/model/stored_result.h"
#include "gateway/model/units.h"
#include "util/rfc3339.h"

namespace idem::gateway {
namespace json = boost::json;

namespace {

constexpr std::size_t kMaxResolve = 10000;

}  // namespace

const char* to_string(ResolvePlan::Decision d) noexcept {
  return d == ResolvePlan::Decision::complete ? "complete" : "release";
}

Result<ResolvePlan> make_resolve_plan(std::string_view key_space, std::optional<std::string> scope,
                                      std::string_view older_than, std::string_view decision,
                                      std::optional<unsigned> answer_status, std::string_view answer_body,
                                      std::string_view answer_content_type, bool dry_run,
                                      std::optional<std::size_t> limit) {
  ResolvePlan p;
  if (!key_space.empty()) {
    if (!is_key_space(key_space))
      return invalid_argument("key_space is 1-64 letters, digits, '-', '_' and '.'");
    p.key_prefix = stored_key(key_space, "");
  }
  p.scope = std::move(scope);
  if (!older_than.empty()) {
    Result<Duration> d = parse_duration(older_than);
    if (!d) return invalid_argument("older_than is a duration such as 10m or 2h");
    p.older_than = *d;
  }
  if (decision == "release") {
    p.decision = ResolvePlan::Decision::release;
    if (answer_status) return invalid_argument("answer goes with decision complete only");
  } else if (decision == "complete") {
    p.decision = ResolvePlan::Decision::complete;
    if (!answer_status || *answer_status < 200 || *answer_status > 599)
      return invalid_argument("decision complete needs answer.status, 200-599: the answer replayed");
    std::vector<std::pair<std::string_view, std::string_view>> fields;
    if (!answer_content_type.empty()) fields.emplace_back("Content-Type", answer_content_type);
    p.answer = encode_response(*answer_status, fields, answer_body);
  } else {
    return invalid_argument("decision is release or complete");
  }
  p.dry_run = dry_run;
  if (limit) {
    if (*limit < 1 || *limit > kMaxResolve) return invalid_argument("limit is from 1 to 10000");
    p.limit = *limit;
  }
  return p;
}

Result<ResolvePlan> parse_resolve_body(std::string_view body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) return invalid_argument("the body is a JSON object");
  const json::object& o = v.as_object();
  for (const auto& [name, _] : o)
    if (name != "key_space" && name != "scope" && name != "older_than" && name != "decision" &&
        name != "answer" && name != "dry_run" && name != "limit")
      return invalid_argument("unknown field " + std::string(name));
  auto text = [&](const char* name) -> Result<std::string> {
    const json::value* f = o.if_contains(name);
    if (!f) return std::string();
    if (!f->is_string()) return invalid_argument(std::string(name) + " is a string");
    return std::string(f->as_string());
  };
  Result<std::string> key_space = text("key_space"), older_than = text("older_than"),
                      decision = text("decision");
  for (const auto* r : {&key_space, &older_than, &decision})
    if (!*r) return r->status();
  std::optional<std::string> scope;
  if (o.contains("scope")) {
    Result<std::string> s = text("scope");
    if (!s) return s.status();
    scope = std::move(*s);
  }
  if (decision->empty()) return invalid_argument("decision is release or complete");
  std::optional<unsigned> status;
  std::string answer_body, content_type;
  if (const json::value* a = o.if_contains("answer")) {
    const json::object* ao = a->if_object();
    const json::value* st = ao ? ao->if_contains("status") : nullptr;
    if (!st || !st->is_int64()) return invalid_argument("answer is {\"status\": N, \"body\": \"...\"}");
    status = static_cast<unsigned>(std::clamp<std::int64_t>(st->as_int64(), 0, 1000));
    if (const json::value* b = ao->if_contains("body")) {
      if (!b->is_string()) return invalid_argument("answer.body is a string");
      answer_body = b->as_string();
    }
    if (const json::value* c = ao->if_contains("content_type")) {
      if (!c->is_string()) return invalid_argument("answer.content_type is a string");
      content_type = c->as_string();
    }
  }
  bool dry_run = false;
  if (const json::value* d = o.if_contains("dry_run")) {
    if (!d->is_bool()) return invalid_argument("dry_run is true or false");
    dry_run = d->as_bool();
  }
  std::optional<std::size_t> limit;
  if (const json::value* l = o.if_contains("limit")) {
    if (!l->is_int64() || l->as_int64() < 1) return invalid_argument("limit is from 1 to 10000");
    limit = static_cast<std::size_t>(l->as_int64());
  }
  return make_resolve_plan(*key_space, std::move(scope), *older_than, *decision, status, answer_body,
                           content_type, dry_run, limit);
}

BulkResolve::BulkResolve(ResolvePlan plan, std::chrono::system_clock::time_point now)
    : plan_(std::move(plan)), now_(now) {}

std::optional<ListArgs> BulkResolve::next() const {
  if (listed_ || selected_.size() >= plan_.limit) return std::nullopt;
  ListArgs a;
  a.key_prefix = plan_.key_prefix;
  a.scope = plan_.scope;
  a.state = RecordState::done;
  a.limit = kMaxListLimit;
  a.cursor = cursor_;
  return a;
}

void BulkResolve::add(ListPage page) {
  for (Record& r : page.records) {
    if (selected_.size() >= plan_.limit) break;
    if (!is_uncertain(r)) continue;
    if (plan_.older_than) {
      // A mark of an earlier release says no time: it is older than any of this one's.
      Result<StoredResult> s = decode_stored_result(r.result);
      const std::int64_t at_ms = s ? s->mark.at_ms : 0;
      const auto marked = std::chrono::system_clock::time_point(std::chrono::milliseconds(at_ms));
      if (at_ms != 0 && now_ - marked < *plan_.older_than) continue;
    }
    selected_.push_back(std::move(r));
  }
  cursor_ = std::move(page.next_cursor);
  listed_ = cursor_.empty();
}

bool BulkResolve::unchanged(const Record& before, const std::optional<Record>& now) {
  return now && now->state == RecordState::done && now->fence == before.fence && now->result == before.result;
}

CommitArgs BulkResolve::completion(const Record& before, std::chrono::system_clock::time_point now) const {
  // The record keeps the time it had left; the store's own retention rules need > 0.
  const auto left = std::chrono::duration_cast<Duration>(before.expires_at - now);
  CommitArgs c;
  c.scope = before.scope;
  c.key = before.key;
  // Not the mark's own fence: a commit with it would be taken for a retry of the one that
  // made the record, and change nothing. The next one, which no acquisition can have had
  // (the mark's is the key's latest), and below every fence a later acquisition gets.
  c.fence = before.fence + 1;
  c.result = plan_.answer;
  c.retention = left > std::chrono::seconds(1) ? left : Duration(std::chrono::seconds(1));
  c.over_uncertain = before.result;  // only over this very mark, never over a late answer
  return c;
}

void BulkResolve::done(const Record& r, std::string_view decision) { outcomes_.emplace_back(&r, decision); }

std::string audit_line(std::string_view action, std::string_view token, std::string_view peer,
                       std::string_view scope, std::string_view key, const Record* before,
                       std::string_view decision) {
  // "audit" first: the line is told from the request log's, which start with "time".
  json::object line{{"audit", "record." + std::string(action)},
                    {"time", util::rfc3339(std::chrono::time_point_cast<std::chrono::microseconds>(
                                               std::chrono::system_clock::now()),
                                           util::SubSecond::milliseconds)},
                    {"token", token},
                    {"peer", peer},
                    {"scope", scope},
                    {"key", key},
                    {"decision", decision}};
  if (before) {
    line["fence"] = before->fence;
    line["state"] = to_string(before->state);
  } else {
    line["fence"] = nullptr;
  }
  return json::serialize(line);
}

std::string BulkResolve::json() const {
  json::array records;
  std::size_t applied = 0;
  for (const auto& [r, decision] : outcomes_) {
    if (decision == "released" || decision == "completed") ++applied;
    records.push_back(
        json::object{{"scope", r->scope}, {"key", r->key}, {"fence", r->fence}, {"decision", decision}});
  }
  json::object o{{"dry_run", plan_.dry_run},
                 {"decision", to_string(plan_.decision)},
                 {"matched", selected_.size()},
                 {"applied", applied},
                 {"records", std::move(records)}};
  return json::serialize(o);
}

}  // namespace idem::gateway
