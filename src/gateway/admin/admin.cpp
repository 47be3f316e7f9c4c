#include "gateway/admin/admin.h"

#include <chrono>
#include <cstdio>
#include <vector>

#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include "gateway/admin/raw_json.h"
#include "gateway/admin/record_json.h"
#include "gateway/admin/record_list.h"
#include "gateway/admin/ui_assets.h"
#include "gateway/http/header_fields.h"
#include "gateway/model/canonical_json.h"
#include "gateway/model/readiness.h"
#include "gateway/model/request_view.h"
#include "gateway/model/route.h"
#include "gateway/model/stored_result.h"
#include "gateway/model/units.h"
#include "idem/async.h"
#include "util/ceil_ms.h"
#include "util/percent.h"
#include "util/rfc3339.h"

namespace idem::gateway {
namespace asio = boost::asio;
namespace json = boost::json;
using asio::awaitable;
using asio::use_awaitable;

namespace {

// What the admin listener reads of a request body at most (a control API call): each
// client's share of the admin listener's body budget holds one (config.h).
constexpr std::uint64_t kBodyLimit = kAdminBodyLimit;

bool is_probe(std::string_view path) { return path == "/healthz" || path == "/readyz" || path == "/metrics"; }

// The longest lease, retention or ttl the control API takes: the longest duration a config
// may write (3650d), so a caller cannot hold a key for longer than an operator could.
constexpr Duration kLongestDuration = kMaxDuration;

constexpr Duration kStoreRetryAfter = std::chrono::seconds(1);

// The fields of a control API body, checked as they are read; the first problem is kept
// for the request-invalid detail.
class Fields {
 public:
  explicit Fields(const json::object& o) : o_(o) {}
  std::string str(const char* name, bool required = true) {
    const json::value* v = o_.if_contains(name);
    if (!v || v->is_null()) {
      if (required) fail(std::string("missing field \"") + name + "\"");
      return {};
    }
    if (!v->is_string()) {
      fail(std::string("field \"") + name + "\" must be a string");
      return {};
    }
    return std::string(v->get_string());
  }
  std::optional<std::uint64_t> u64(const char* name, bool required = true) {
    const json::value* v = o_.if_contains(name);
    if (!v || v->is_null()) {
      if (required) fail(std::string("missing field \"") + name + "\"");
      return std::nullopt;
    }
    if (v->is_uint64()) return v->get_uint64();
    if (v->is_int64() && v->get_int64() >= 0) return static_cast<std::uint64_t>(v->get_int64());
    fail(std::string("field \"") + name + "\" must be a non-negative integer");
    return std::nullopt;
  }
  // A duration in milliseconds from 1 to kLongestDuration, or `fallback` when omitted and
  // not required.
  Duration millis(const char* name, Duration fallback, bool required = false) {
    auto v = u64(name, required);
    if (!v) return fallback;
    constexpr auto kMax = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(kLongestDuration).count());
    if (*v == 0 || *v > kMax) {
      fail(std::string("field \"") + name + "\" must be from 1 to " + std::to_string(kMax) + " (3650 days)");
      return fallback;
    }
    return std::chrono::duration_cast<Duration>(std::chrono::milliseconds(*v));
  }
  const json::value* any(const char* name) {
    const json::value* v = o_.if_contains(name);
    if (!v) fail(std::string("missing field \"") + name + "\"");
    return v;
  }
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  void fail(std::string e) {
    if (error_.empty()) error_ = std::move(e);
  }
  const json::object& o_;
  std::string error_;
};

std::string outcome(const char* name) { return json::serialize(json::object{{"outcome", name}}); }

// 401 unauthorized with a Bearer and a Basic challenge: a browser asks the operator for the
// token (as the password) and sends it with every request of the page from then on.
HttpResponse unauthorized(unsigned version, bool keep_alive) {
  HttpResponse res = problem_response(
      Problem::unauthorized,
      "a valid Authorization is required: Bearer <token>, or Basic with the token as the password", version,
      keep_alive);
  for (std::string_view challenge : kAdminChallenges) res.insert(http::field::www_authenticate, challenge);
  return res;
}

// A file of the operator's page, with what keeps it from being framed, cached or
// reinterpreted, and its script from running anything but itself (docs/admin.md).
HttpResponse ui_response(const UiAsset& asset, unsigned version, bool keep_alive) {
  HttpResponse res{http::status::ok, version};
  res.set(http::field::content_type, asset.content_type);
  res.set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'");
  res.set("X-Frame-Options", "DENY");
  res.set(http::field::cache_control, "no-store");
  res.set("X-Content-Type-Options", "nosniff");
  res.set("Referrer-Policy", "no-referrer");
  res.body() = std::string(asset.body);
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

// The roles that may use an admin endpoint (docs/admin.md, "Tokens and roles"): the page,
// the listing and deletions are the operator's, the rest of /v1/ the control API's; one
// record's GET is both's, since a service reads the record of its own key after an outcome
// it did not learn (docs/control-api.md, "Errors").
unsigned roles_for(http::verb method, std::string_view path) {
  const bool records = path.starts_with("/v1/records/") || path == "/v1/records";
  if (path.starts_with("/v1/") && !records) return kRoleControl;
  if (path.starts_with("/v1/records/") && method == http::verb::get) return kRoleControl | kRoleOperator;
  return kRoleOperator;
}

const char* role_name(unsigned roles) { return roles & kRoleControl ? "control" : "operator"; }

// Who acted, in the audit line and the metric, when the listener takes no token (loopback
// alone): a name no token can have.
constexpr std::string_view kNoToken = "(local)";

}  // namespace

std::shared_ptr<const Admin::Settings> Admin::settings_of(std::shared_ptr<const Config> config) {
  std::vector<AdminTokens::Named> named;
  if (!config->admin.token.empty())
    named.push_back({"admin", config->admin.token, kRoleControl | kRoleOperator});
  for (const AdminTokenConfig& t : config->admin.tokens) named.push_back({t.name, t.value, t.roles});
  AdminTokens tokens(named);
  return std::make_shared<const Settings>(Settings{std::move(config), std::move(tokens)});
}

Admin::Admin(const Config& config, Store& store, Metrics& metrics, ReplayCache* cache)
    : settings_(settings_of(std::make_shared<const Config>(config))),
      store_(store),
      metrics_(metrics),
      cache_(cache) {}

void Admin::reload(std::shared_ptr<const Config> next) { settings_.store(settings_of(std::move(next))); }

HttpResponse Admin::store_failed(const HttpRequest& req, std::string_view op, const Status& s) const {
  std::fprintf(stderr, "idem: admin: %.*s: store failed: %s\n", static_cast<int>(op.size()), op.data(),
               s.to_string().c_str());
  // Unavailable: nothing was applied, the caller retries as is. Outcome unknown: the call
  // may have been applied, so the caller reads the record before it retries
  // (docs/control-api.md, "Errors").
  if (s.code() == StatusCode::deadline_exceeded)
    return problem_response(Problem::store_timeout,
                            "the idempotency store did not answer: the call may have been applied; read the "
                            "record before retrying",
                            req.version(), req.keep_alive());
  return problem_response(Problem::store_unavailable, "the idempotency store is unavailable", req.version(),
                          req.keep_alive(), kStoreRetryAfter);
}

void Admin::log_readiness(const Readiness& r, const Status& ping) {
  // Probes poll: say when the answer changes, not at every poll.
  const Ready now = r.problem ? Ready::no : (ping.is_ok() ? Ready::yes : Ready::without_store);
  const Ready before = ready_.exchange(now);
  if (now == before) return;
  switch (now) {
    case Ready::yes:
      std::fprintf(stderr, "idem: admin: the store answers; ready\n");
      break;
    case Ready::without_store:
      std::fprintf(stderr,
                   "idem: admin: store ping failed: %s; still ready: every route forwards without the store "
                   "(on_store_error: pass)\n",
                   ping.to_string().c_str());
      break;
    case Ready::no:
      std::fprintf(stderr, "idem: admin: not ready: store ping failed: %s; %s\n", ping.to_string().c_str(),
                   r.detail.c_str());
      break;
  }
}

awaitable<std::optional<Answer>> Admin::serve(HttpExchange& exchange) {
  // Who may ask, and what, is decided from the head alone: a refused request's body is
  // never read (nor held in the listener's body budget), and a probe reads none.
  const http::request_header<>& head = exchange.head();
  const bool ka = exchange.keep_alive();
  if (std::optional<HttpResponse> refused = refuse(head, ka)) co_return Answer{std::move(*refused)};
  if (is_probe(target_path(head.target()))) co_return Answer{co_await probe(head, ka)};
  BodyRead body = co_await exchange.read_body(kBodyLimit);
  if (body.client_gone) co_return std::nullopt;
  if (body.refusal) co_return Answer{std::move(*body.refusal)};
  co_return Answer{co_await handle(*body.request, exchange.meta().client)};
}

std::optional<HttpResponse> Admin::refuse(const http::request_header<>& head, bool ka) const {
  const unsigned v = head.version();
  const std::vector<HeaderField> fields = header_fields(head);
  const std::shared_ptr<const Settings> settings = settings_.load();
  const AdminTokens& tokens = settings->tokens;
  const std::string_view path = target_path(head.target());
  const bool probe = is_probe(path);
  // Before anything else, so that a refused request learns nothing, not even readiness.
  // With a token, the page, records and control API still refuse other sites' pages: a
  // browser that holds the operator's Basic credentials sends them on its own.
  if (auto refused = tokens.configured() ? (probe ? std::nullopt : check_origin(fields))
                                         : check_loopback_request(fields))
    return problem_response(refused->problem, refused->detail, v, ka);
  if (probe && head.method() == http::verb::get) return std::nullopt;
  const bool records_path = path.starts_with("/v1/records/") || path == "/v1/records";
  const bool control_path = path.starts_with("/v1/") && !records_path;
  if (!records_path && !control_path && !find_ui_asset(path))
    return problem_response(Problem::not_found, "no such admin endpoint", v, ka);
  if (!tokens.configured()) return std::nullopt;
  const std::optional<AdminTokens::Caller> caller =
      tokens.match(find_header(fields, "Authorization").value_or(""));
  if (!caller) return unauthorized(v, ka);
  const unsigned needed = roles_for(head.method(), path);
  if ((caller->roles & needed) == 0)
    return problem_response(Problem::forbidden,
                            "the token '" + caller->name + "' does not have the " + role_name(needed) +
                                " role that this endpoint needs (docs/admin.md, \"Tokens and roles\")",
                            v, ka);
  return std::nullopt;
}

awaitable<HttpResponse> Admin::probe(const http::request_header<>& head, bool ka) {
  const unsigned v = head.version();
  const std::string_view path = target_path(head.target());
  // Liveness never asks the store: a store outage is for readiness and the routes' policy
  // to judge, and a restart would not bring the store back (docs/admin.md, "Readiness").
  if (path == "/healthz") co_return json_response(http::status::ok, "{\"status\":\"ok\"}", v, ka);
  if (path == "/readyz") {
    // Held across the ping: a reload meanwhile leaves this config alive.
    const std::shared_ptr<const Settings> settings = settings_.load();
    const std::span<const Route> routes = settings->config->routes;
    if (draining_.load()) {
      const Readiness r = readiness(true, false, routes);
      co_return problem_response(*r.problem, r.detail, v, ka);
    }
    auto call = async_ping(store_, use_awaitable);
    Result<Done> pinged = co_await std::move(call);
    const Readiness r = readiness(false, pinged.is_ok(), routes);
    log_readiness(r, pinged.status());
    if (r.problem) co_return problem_response(*r.problem, r.detail, v, ka, kStoreRetryAfter);
    co_return json_response(http::status::ok, r.body, v, ka);
  }
  HttpResponse res{http::status::ok, v};  // /metrics
  res.set(http::field::content_type, "text/plain; version=0.0.4");
  res.body() = metrics_.render();
  {
    const std::shared_ptr<const Settings> settings = settings_.load();
    std::vector<RouteLabels> routes;
    for (const Route& r : settings->config->routes) routes.push_back({r.name, r.key_space});
    res.body() += render_route_info(routes);
  }
  res.keep_alive(ka);
  res.prepare_payload();
  co_return res;
}

awaitable<HttpResponse> Admin::handle(const HttpRequest& req, std::string_view peer) {
  const unsigned v = req.version();
  const bool ka = req.keep_alive();
  if (std::optional<HttpResponse> refused = refuse(req.base(), ka)) co_return std::move(*refused);
  const std::string_view path = target_path(req.target());
  if (is_probe(path)) co_return co_await probe(req.base(), ka);
  const std::shared_ptr<const Settings> settings = settings_.load();
  constexpr std::string_view kRecords = "/v1/records/";
  if (const std::optional<UiAsset> asset = find_ui_asset(path)) {
    if (req.method() != http::verb::get) {
      HttpResponse res =
          problem_response(Problem::method_not_allowed, "the operator's page takes GET", v, ka);
      res.set(http::field::allow, "GET");
      co_return res;
    }
    co_return ui_response(*asset, v, ka);
  }
  if (path == "/v1/records") co_return co_await list_records(req);
  if (path.starts_with(kRecords)) co_return co_await records(req, path.substr(kRecords.size()), peer);
  if (req.method() != http::verb::post)
    co_return problem_response(Problem::method_not_allowed, "the control API takes POST", v, ka);
  if (auto refused = check_json_request(header_fields(req)))
    co_return problem_response(refused->problem, refused->detail, v, ka);
  co_return co_await control(req, path.substr(3), *settings->config);
}

awaitable<HttpResponse> Admin::records(const HttpRequest& req, std::string_view rest, std::string_view peer) {
  const unsigned v = req.version();
  const bool ka = req.keep_alive();
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos || rest.find('/', slash + 1) != std::string_view::npos ||
      slash + 1 == rest.size())
    co_return problem_response(Problem::request_invalid, "expected /v1/records/{scope}/{key}", v, ka);
  const std::string_view raw_scope = rest.substr(0, slash);
  using util::BadPercent;
  RecordId id{raw_scope == "_" ? std::string() : *util::percent_decode(raw_scope, BadPercent::keep),
              *util::percent_decode(rest.substr(slash + 1), BadPercent::keep)};
  // ?key_space=NAME: {key} is the key as the route rendered it, stored in NAME's key space.
  if (std::optional<std::string> space = find_form_value(target_query(req.target()), "key_space")) {
    if (!is_key_space(*space))
      co_return problem_response(Problem::request_invalid,
                                 "key_space is 1-64 letters, digits, '-', '_' and '.'", v, ka);
    id.key = stored_key(*space, id.key);
  }
  if (req.method() == http::verb::get) {
    auto call = async_get(store_, std::move(id), use_awaitable);
    Result<std::optional<Record>> r = co_await std::move(call);
    if (!r) co_return store_failed(req, "GET /v1/records", r.status());
    if (!*r) co_return problem_response(Problem::not_found, "no record with this scope and key", v, ka);
    co_return json_response(http::status::ok, record_json(**r), v, ka);
  }
  if (req.method() == http::verb::delete_) {
    const RecordId removed = id;
    // The record as it was, for the audit line: its state and fence (docs/admin.md,
    // "Tokens and roles"). A failed read does not stop the removal.
    auto read = async_get(store_, RecordId(id), use_awaitable);
    Result<std::optional<Record>> before = co_await std::move(read);
    auto call = async_remove(store_, std::move(id), use_awaitable);
    Result<bool> r = co_await std::move(call);
    // Also when the store failed: the removal may have been applied.
    if (cache_) cache_->erase(removed.scope, removed.key);
    const char* decision = !r ? "store_failed" : (*r ? "deleted" : "not_found");
    const Record* was = before && *before ? &**before : nullptr;
    audit(req, peer, "delete", removed, was, decision, r && *r);
    if (!r) co_return store_failed(req, "DELETE /v1/records", r.status());
    if (!*r) co_return problem_response(Problem::not_found, "no record with this scope and key", v, ka);
    HttpResponse res{http::status::no_content, v};
    res.keep_alive(ka);
    co_return res;
  }
  co_return problem_response(Problem::method_not_allowed, "records take GET or DELETE", v, ka);
}

void Admin::audit(const HttpRequest& req, std::string_view peer, std::string_view action, const RecordId& id,
                  const Record* before, std::string_view decision, bool applied) {
  const std::optional<AdminTokens::Caller> caller =
      settings_.load()->tokens.match(find_header(header_fields(req), "Authorization").value_or(""));
  const std::string token = caller ? caller->name : std::string(kNoToken);
  // "audit" first: the line is told from the request log's, which start with "time".
  json::object line{{"audit", "record." + std::string(action)},
                    {"time", util::rfc3339(std::chrono::time_point_cast<std::chrono::microseconds>(
                                               std::chrono::system_clock::now()),
                                           util::SubSecond::milliseconds)},
                    {"token", token},
                    {"peer", peer},
                    {"scope", id.scope},
                    {"key", id.key},
                    {"decision", decision}};
  if (before) {
    line["fence"] = before->fence;
    line["state"] = to_string(before->state);
  } else {
    line["fence"] = nullptr;
  }
  std::fprintf(stderr, "%s\n", json::serialize(line).c_str());
  if (applied) metrics_.count_admin_action(action, token);
}

// GET /v1/records?...: one answer gathered from as many store pages as it takes
// (record_list.h).
awaitable<HttpResponse> Admin::list_records(const HttpRequest& req) {
  const unsigned v = req.version();
  const bool ka = req.keep_alive();
  if (req.method() != http::verb::get)
    co_return problem_response(Problem::method_not_allowed, "listing records takes GET", v, ka);
  Result<ListRequest> parsed = parse_list_query(target_query(req.target()));
  if (!parsed) co_return problem_response(Problem::request_invalid, parsed.status().message(), v, ka);
  ListCollector list(std::move(*parsed));
  while (std::optional<ListArgs> args = list.next()) {
    auto call = async_list(store_, std::move(*args), use_awaitable);
    Result<ListPage> page = co_await std::move(call);
    if (!page && page.status().code() == StatusCode::invalid_argument)  // a cursor from elsewhere
      co_return problem_response(Problem::request_invalid, "cursor: not a cursor this store handed out", v,
                                 ka);
    if (!page) co_return store_failed(req, "GET /v1/records", page.status());
    list.add(std::move(*page));
  }
  co_return json_response(http::status::ok, list.json(), v, ka);
}

// One endpoint of the control API (docs/control-api.md): the request, its JSON fields, the
// config's defaults, and the answers every endpoint gives alike.
struct Admin::ControlCall {
  const HttpRequest& req;
  std::string_view op;  // "/begin"
  const Config& config;
  Fields& f;
  const Policy& d;  // the config's defaults

  HttpResponse invalid(std::string_view detail) const {
    return problem_response(Problem::request_invalid, detail, req.version(), req.keep_alive());
  }
  HttpResponse ok(std::string body) const {
    return json_response(http::status::ok, std::move(body), req.version(), req.keep_alive());
  }
  HttpResponse conflict(const char* name) const {
    return json_response(http::status::conflict, outcome(name), req.version(), req.keep_alive());
  }
};

HttpResponse Admin::failed(const ControlCall& c, const Status& s) const {
  return store_failed(c.req, "POST /v1" + std::string(c.op), s);
}

awaitable<HttpResponse> Admin::control(const HttpRequest& req, std::string_view op, const Config& config) {
  using Endpoint = awaitable<HttpResponse> (Admin::*)(ControlCall&);
  static constexpr std::pair<std::string_view, Endpoint> kEndpoints[] = {
      {"/begin", &Admin::control_begin},
      {"/commit", &Admin::control_commit},
      {"/release", &Admin::control_release},
      {"/abandon", &Admin::control_abandon},
      {"/extend", &Admin::control_extend},
      {"/tokens", &Admin::control_issue_token},
      {"/tokens/consume", &Admin::control_consume_token},
      {"/tokens/restore", &Admin::control_restore_token},
      {"/locks/acquire", &Admin::control_lock},
      {"/locks/extend", &Admin::control_extend_lock},
      {"/locks/release", &Admin::control_unlock},
  };
  boost::system::error_code ec;
  json::value body = json::parse(req.body(), ec);
  for (const auto& [path, endpoint] : kEndpoints) {
    if (path != op) continue;
    if (ec || !body.is_object())
      co_return problem_response(Problem::request_invalid, "the body must be a JSON object", req.version(),
                                 req.keep_alive());
    Fields f(body.get_object());
    ControlCall call{req, op, config, f, config.defaults};
    co_return co_await (this->*endpoint)(call);
  }
  co_return problem_response(Problem::not_found, "no such control API endpoint", req.version(),
                             req.keep_alive());
}

awaitable<HttpResponse> Admin::control_begin(ControlCall& c) {
  // `owner` names the claim for /v1/abandon: a caller whose begin's answer was lost can
  // give back a claim it never learned the fence of (docs/control-api.md).
  BeginArgs a{c.f.str("scope"),
              c.f.str("key"),
              c.f.str("fingerprint", false),
              c.f.millis("lease_ms", c.d.lease),
              c.f.millis("retention_ms", c.d.retention),
              c.f.str("owner", false)};
  if (!c.f.ok() || a.key.empty())
    co_return c.invalid(c.f.ok() ? "field \"key\" must not be empty" : c.f.error());
  auto call = async_begin(store_, std::move(a), use_awaitable);
  Result<BeginOutcome> r = co_await std::move(call);
  if (!r) co_return failed(c, r.status());
  json::object o{{"outcome", to_string(r->kind)}};
  if (r->kind == BeginOutcome::Kind::acquired) {
    o["fence"] = r->fence;
    o["recovered"] = r->recovered;
    if (r->recovered) o["previous_fence"] = r->previous_fence;
  } else if (r->kind == BeginOutcome::Kind::in_progress) {
    o["retry_after_ms"] = util::ceil_ms(r->retry_after);
  } else if (r->kind == BeginOutcome::Kind::replay) {
    Result<StoredResult> s = decode_stored_result(r->result);
    if (s && s->kind == StoredResult::Kind::json)  // as committed, byte for byte
      co_return c.ok(with_member(json::serialize(o), "result", json_value_text(s->json)));
    json::value result;
    if (s && s->kind == StoredResult::Kind::response)
      result = json::object{{"response_status", s->response.status}, {"body", s->response.body}};
    o["result"] = std::move(result);
  }
  co_return c.ok(json::serialize(o));
}

awaitable<HttpResponse> Admin::control_commit(ControlCall& c) {
  const json::value* result = c.f.any("result");
  CommitArgs a{c.f.str("scope"),
               c.f.str("key"),
               c.f.u64("fence").value_or(0),
               {},
               c.f.millis("retention_ms", c.d.retention)};
  if (!c.f.ok()) co_return c.invalid(c.f.error());
  // The result as the client wrote it: numbers a double cannot hold stay exact. The body
  // must then be JSON by the stricter rules of exact parsing (no repeated member names).
  Result<ExactJson> exact = parse_exact_json(c.req.body());
  if (!exact) co_return c.invalid("the body is not valid JSON: " + exact.status().message());
  std::optional<std::string_view> written = member_text(c.req.body(), "result");
  StoredResult stored;
  stored.kind = StoredResult::Kind::json;
  stored.json = written ? std::string(*written) : json::serialize(*result);
  a.result = encode(stored);
  auto call = async_commit(store_, std::move(a), use_awaitable);
  Result<CommitOutcome> r = co_await std::move(call);
  if (!r) co_return failed(c, r.status());
  if (*r == CommitOutcome::fenced) co_return c.conflict("fenced");
  co_return c.ok(outcome("committed"));
}

awaitable<HttpResponse> Admin::control_release(ControlCall& c) {
  ReleaseArgs a{c.f.str("scope"), c.f.str("key"), c.f.u64("fence").value_or(0)};
  if (!c.f.ok()) co_return c.invalid(c.f.error());
  auto call = async_release(store_, std::move(a), use_awaitable);
  Result<ReleaseOutcome> r = co_await std::move(call);
  if (!r) co_return failed(c, r.status());
  if (*r == ReleaseOutcome::fenced) co_return c.conflict("fenced");
  co_return c.ok(outcome("released"));
}

awaitable<HttpResponse> Admin::control_abandon(ControlCall& c) {
  AbandonArgs a{c.f.str("scope"), c.f.str("key"), c.f.str("owner")};
  if (!c.f.ok() || a.owner.empty())
    co_return c.invalid(c.f.ok() ? "field \"owner\" must not be empty" : c.f.error());
  auto call = async_abandon(store_, std::move(a), use_awaitable);
  Result<ReleaseOutcome> r = co_await std::move(call);
  if (!r) co_return failed(c, r.status());
  if (*r == ReleaseOutcome::fenced) co_return c.conflict("fenced");
  co_return c.ok(outcome("released"));
}

awaitable<HttpResponse> Admin::control_extend(ControlCall& c) {
  ExtendArgs a{c.f.str("scope"), c.f.str("key"), c.f.u64("fence").value_or(0),
               c.f.millis("lease_ms", c.d.lease, true)};
  if (!c.f.ok()) co_return c.invalid(c.f.error());
  auto call = async_extend(store_, std::move(a), use_awaitable);
  Result<ExtendOutcome> r = co_await std::move(call);
  if (!r) co_return failed(c, r.status());
  if (*r == ExtendOutcome::fenced) co_return c.conflict("fenced");
  co_return c.ok(outcome("extended"));
}

awaitable<HttpResponse> Admin::control_issue_token(ControlCall& c) {
  IssueTokenArgs a{c.f.str("scope"), c.f.millis("ttl_ms", c.config.tokens.ttl)};
  if (!c.f.ok()) co_return c.invalid(c.f.error());
  auto call = async_issue_token(store_, std::move(a), use_awaitable);
  Result<std::string> r = co_await std::move(call);
  if (!r) co_return failed(c, r.status());
  metrics_.count_token_issued();
  co_return c.ok(json::serialize(json::object{{"token", *r}}));
}

awaitable<HttpResponse> Admin::control_consume_token(ControlCall& c) {
  TokenArgs a{c.f.str("scope"), c.f.str("token")};
  if (!c.f.ok()) co_return c.invalid(c.f.error());
  auto call = async_consume_token(store_, std::move(a), use_awaitable);
  Result<ConsumeOutcome> r = co_await std::move(call);
  if (!r) co_return failed(c, r.status());
  co_return c.ok(outcome(to_string(*r)));
}

awaitable<HttpResponse> Admin::control_restore_token(ControlCall& c) {
  RestoreTokenArgs a{c.f.str("scope"), c.f.str("token"), c.f.millis("ttl_ms", c.config.tokens.ttl)};
  if (!c.f.ok()) co_return c.invalid(c.f.error());
  auto call = async_restore_token(store_, std::move(a), use_awaitable);
  Result<RestoreOutcome> r = co_await std::move(call);
  if (!r) co_return failed(c, r.status());
  co_return c.ok(outcome(to_string(*r)));
}

// The fields /v1/locks/acquire and /v1/locks/extend share; nullopt after answering `bad`.
std::optional<LockArgs> Admin::lock_args(ControlCall& c, HttpResponse& bad) {
  LockArgs a{c.f.str("name"), c.f.str("owner"), c.f.millis("ttl_ms", Duration{}, true)};
  if (c.f.ok() && !a.name.empty() && !a.owner.empty()) return a;
  bad = c.invalid(c.f.ok() ? "fields \"name\" and \"owner\" must not be empty" : c.f.error());
  return std::nullopt;
}

awaitable<HttpResponse> Admin::control_lock(ControlCall& c) {
  HttpResponse bad;
  std::optional<LockArgs> a = lock_args(c, bad);
  if (!a) co_return bad;
  auto call = async_lock(store_, std::move(*a), use_awaitable);
  Result<LockOutcome> r = co_await std::move(call);
  if (!r) co_return failed(c, r.status());
  json::object o{{"outcome", to_string(r->kind)}};
  if (r->kind == LockOutcome::Kind::locked)
    o["fence"] = r->fence;
  else
    o["retry_after_ms"] = util::ceil_ms(r->retry_after);
  co_return c.ok(json::serialize(o));
}

awaitable<HttpResponse> Admin::control_extend_lock(ControlCall& c) {
  HttpResponse bad;
  std::optional<LockArgs> a = lock_args(c, bad);
  if (!a) co_return bad;
  auto call = async_extend_lock(store_, std::move(*a), use_awaitable);
  Result<LockExtendOutcome> r = co_await std::move(call);
  if (!r) co_return failed(c, r.status());
  if (*r == LockExtendOutcome::not_owner) co_return c.conflict("not_owner");
  co_return c.ok(outcome("extended"));
}

awaitable<HttpResponse> Admin::control_unlock(ControlCall& c) {
  UnlockArgs a{c.f.str("name"), c.f.str("owner")};
  if (!c.f.ok()) co_return c.invalid(c.f.error());
  auto call = async_unlock(store_, std::move(a), use_awaitable);
  Result<UnlockOutcome> r = co_await std::move(call);
  if (!r) co_return failed(c, r.status());
  if (*r == UnlockOutcome::not_owner) co_return c.conflict("not_owner");
  co_return c.ok(outcome("released"));
}

}  // namespace idem::gateway
