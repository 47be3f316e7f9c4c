// The request-to-key path (docs/gateway.md) on structured requests: the input chooses a route —
// one of a fixed config covering every key source (header, Structured Field header, token,
// templates over json, header, query, path, form and subject), every fingerprint rule and
// both subject kinds, or a route around a template read from the input — then the
// method, target, headers and body. identify_request (subject → key → body size →
// template → fingerprint) must answer every request with a decision that keeps the
// contract of request_identity.h:
//   - protect: a key of 1–255 visible ASCII characters, stored in the route's key space;
//     the header key is what parse_key_header reads; a scope that fits the subject rule; a 16-byte
//     fingerprint in replay mode unless `fingerprint: none`, none otherwise
//   - unprotected only under `required: false`; reject only with a problem of §3.2
//   - the same request, copied, gets the same decision, detail included
//   - a JSON body re-sent in its canonical form keeps the key and, under json and
//     template fingerprints, the fingerprint
//   - on a JSON-RPC route: pass-through is unprotected whatever `required` says; a call's
//     id is JSON and splices into the body and back (with_jsonrpc_id, top_level_member)
//   - no exception escapes (hash_subject's bad_alloc is left to the fuzzer's OOM report)
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <fuzzer/FuzzedDataProvider.h>

#include "fuzz/fuzz_check.h"
#include "gateway/model/canonical_json.h"
#include "gateway/model/config/config.h"
#include "gateway/model/jsonrpc.h"
#include "gateway/model/key.h"
#include "gateway/model/request_fingerprint.h"
#include "gateway/model/request_identity.h"
#include "gateway/model/request_reading.h"
#include "gateway/model/route.h"
#include "util/ascii.h"

namespace {

using namespace idem::gateway;
using idem::Result;
using idem::fuzz::check;

const Config& config() {
  static const Config c = load_config_text(R"(
tokens:
  subject: header:X-User-Id
routes:
  - name: header-key
    match: {method: POST, path: /orders}
  - name: header-key-optional
    match: {method: [POST, PUT], path: /h/*}
    key: header:X-Request-Id
    required: false
    subject: header:X-Tenant
    fingerprint: json
  - name: token
    match: {method: POST, path: /forms/*}
    key: token
  - name: token-optional
    match: {method: POST, path: /tforms/*}
    key: token
    required: false
    fingerprint: none
  - name: json-key
    match: {method: POST, path: /pay}
    key: "pay:{json.out_trade_no}"
    fingerprint: json
  - name: json-deep
    match: {method: [POST, PATCH], path: /deep}
    key: "{json.items.0.sku}:{json.a.b.c}"
    required: false
    fingerprint: ["{json.amount}", "{json.currency}", "x{json.items.1}"]
  - name: header-template
    match: {method: POST, path: /ht}
    key: "{header.X-Order}:{header.X-Part}"
    max_body: 64B
  - name: query-template
    match: {method: GET, path: /q}
    key: "q:{query.id}"
    fingerprint: ["{query.id}", "{query.v}"]
  - name: path-lock
    match: {method: POST, path: "/skus/{sku}/deduct"}
    key: "stock:{path.sku}"
    mode: lock
  - name: path-fields
    match: {method: POST, path: "/acct/{a}/tx/{b}"}
    key: "{path.a}/{path.b}"
    fingerprint: ["{path.a}", "{json.x}", "{header.X-K}"]
  - name: form-template
    match: {method: POST, path: /form}
    key: "f:{form.id}"
    required: false
    fingerprint: ["{form.id}", "{form.amount}"]
  - name: subject-hash
    match: {method: POST, path: /me}
    subject: header-hash:Authorization
    key: "u:{subject}:{json.id}"
    fingerprint: json
  - name: subject-header
    match: {method: POST, path: "/tenant/{t}/*"}
    subject: header:X-Tenant
    key: "{subject}:{query.k}:{path.t}"
    required: false
    fingerprint: none
  - name: everything
    match: {method: POST, path: "/mix/{p}"}
    subject: header-hash:Cookie
    key: "{json.k}:{header.X-K}:{query.k}:{path.p}:{subject}"
    fingerprint: ["{json.k}", "{header.X-K}", "{query.k}", "{path.p}", "{form.k}", "{subject}"]
  - name: jsonrpc-meta
    match: {method: POST, path: /mcp}
    mode: jsonrpc
    key: "{json.params._meta.k}"
  - name: jsonrpc-header
    match: {method: POST, path: "/rpc/*"}
    mode: jsonrpc
    jsonrpc_methods: [tools/call, a]
    subject: header:X-Tenant
    required: false
)",
                                           "request_key_fuzz.yaml");
  return c;
}

// Header names the routes look at, and one no route does.
constexpr std::string_view kHeaderNames[] = {
    "Idempotency-Key", "idempotency-key", "Idempotency-Token", "X-Request-Id", "X-Tenant", "X-User-Id",
    "Authorization",   "Cookie",          "Content-Type",      "X-Order",      "X-Part",   "X-K",
    "Accept"};
constexpr std::string_view kContentTypes[] = {"application/json", "application/x-www-form-urlencoded",
                                              "Application/X-WWW-Form-Urlencoded ; charset=utf-8",
                                              "text/plain"};
constexpr std::string_view kMethods[] = {"POST", "PUT", "PATCH", "GET", "DELETE"};

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A request that owns its bytes; view() is valid until it changes.
struct OwnedRequest {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::vector<HeaderField> fields;

  RequestView view() {
    fields.clear();
    for (const auto& [n, v] : headers) fields.push_back({n, v});
    return {method, target, fields, body};
  }
};

// A route around a template from the input (route `fuzzed-template`), with the rest of its
// settings chosen by the input too. Nullopt when the template does not parse.
std::optional<Route> fuzzed_route(FuzzedDataProvider& in) {
  Result<KeyTemplate> t = KeyTemplate::parse(in.ConsumeRandomLengthString(96));
  if (!t) return std::nullopt;
  Route r;
  r.name = "fuzzed-template";
  r.key_space = r.name;
  r.methods = {"POST"};
  r.path = *PathPattern::parse("/fz/{p}/{q}/*");
  r.key.kind = KeyRule::Kind::templated;
  r.key.key_template = std::move(*t);
  r.required = in.ConsumeBool();
  r.mode = in.ConsumeBool() ? Mode::lock : Mode::replay;
  switch (in.ConsumeIntegralInRange(0, 2)) {
    case 0:
      break;
    case 1:
      r.policy.subject = {Subject::Kind::header, "X-Tenant"};
      break;
    default:
      r.policy.subject = {Subject::Kind::header_hash, "Authorization"};
  }
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0:
      r.policy.fingerprint.kind = FingerprintRule::Kind::body;
      break;
    case 1:
      r.policy.fingerprint.kind = FingerprintRule::Kind::json;
      break;
    case 2:
      r.policy.fingerprint.kind = FingerprintRule::Kind::none;
      break;
    default:
      r.policy.fingerprint.kind = FingerprintRule::Kind::fields;
      r.policy.fingerprint.fields.push_back(r.key.key_template);
  }
  return r;
}

OwnedRequest read_request(FuzzedDataProvider& in, const Route& route) {
  OwnedRequest req;
  req.method = in.ConsumeBool() ? std::string(in.PickValueInArray(kMethods)) : route.methods.front();
  if (in.ConsumeBool()) {
    req.target = in.ConsumeRandomLengthString(128);
  } else {
    req.target =
        idem::fuzz::path_for(route.path.text(), [&](int) { return in.ConsumeRandomLengthString(24); });
    if (in.ConsumeBool()) req.target += "?" + in.ConsumeRandomLengthString(64);
  }
  const int n = in.ConsumeIntegralInRange(0, 8);
  for (int i = 0; i < n; ++i) {
    std::string name =
        in.ConsumeBool() ? std::string(in.PickValueInArray(kHeaderNames)) : in.ConsumeRandomLengthString(16);
    std::string value = name == "Content-Type" && in.ConsumeBool()
                            ? std::string(in.PickValueInArray(kContentTypes))
                            : in.ConsumeRandomLengthString(80);
    // HTTP parsers deliver values without surrounding whitespace (request_view.h).
    req.headers.emplace_back(std::move(name), std::string(trim_ows(value)));
  }
  req.body = in.ConsumeRemainingBytesAsString();
  return req;
}

bool is_lower_hex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool same(const Decision& a, const Decision& b, bool with_detail) {
  if (a.verdict != b.verdict) return false;
  if (a.verdict == Verdict::reject) {
    return a.rejection.problem == b.rejection.problem &&
           (!with_detail || a.rejection.detail == b.rejection.detail);
  }
  return a.identity.scope == b.identity.scope && a.identity.key == b.identity.key &&
         a.identity.fingerprint == b.identity.fingerprint;
}

void check_decision(const Decision& d, const Route& route, const RequestView& request) {
  switch (d.verdict) {
    case Verdict::unprotected:
      // A JSON-RPC route forwards what is not a call of its methods.
      check(!route.required || route.jsonrpc.has_value(), "unprotected on a required route", route.name);
      return;
    case Verdict::reject:
      switch (d.rejection.problem) {
        case Problem::key_missing:
        case Problem::key_invalid:
        case Problem::subject_missing:
        case Problem::body_too_large:
        case Problem::body_invalid:
        case Problem::token_missing:
        case Problem::token_invalid:
        case Problem::request_ambiguous:
          break;
        default:
          check(false, "a problem identification never gives", problem_name(d.rejection.problem));
      }
      check(!d.rejection.detail.empty(), "a rejection without a detail", route.name);
      return;
    case Verdict::protect:
      break;
  }
  const Identity& id = d.identity;
  check(idem::is_valid_key(id.key), "a key that is not 1-255 visible ASCII", id.key);
  check(id.record_key == stored_key(route.key_space, id.key), "a record key outside the route's key space",
        id.record_key);
  if (route.key.kind != KeyRule::Kind::templated) {
    const std::string_view header = route.key.kind == KeyRule::Kind::token ? kTokenHeader : route.key.header;
    check(count_headers(request.headers, header) == 1, "a header key from no header or several", header);
    Result<std::string> parsed = idem::parse_key_header(*find_header(request.headers, header));
    check(parsed.is_ok() && *parsed == id.key, "the key is not the header's", id.key);
  }
  switch (route.policy.subject.kind) {
    case Subject::Kind::none:
      check(id.scope.empty(), "a scope without a subject", id.scope);
      break;
    case Subject::Kind::header: {
      // One field line, read as it is (an Authorization as its scheme is spelled apart).
      const std::string& name = route.policy.subject.header;
      const std::string value = find_header(request.headers, name).value_or("");
      check(
          count_headers(request.headers, name) == 1 && !id.scope.empty() &&
              id.scope == (idem::util::iequals(name, "Authorization") ? normalize_credentials(value) : value),
          "the scope is not the subject header's value", id.scope);
      break;
    }
    case Subject::Kind::header_hash:
      check(id.scope.size() == 64 && is_lower_hex(id.scope), "a header-hash scope that is not SHA-256 hex",
            id.scope);
      break;
    case Subject::Kind::jwt:  // never chosen here: a verified claim needs keys (jwt_test.cpp)
      check(!id.scope.empty(), "an empty JWT scope", id.scope);
      break;
  }
  // A JSON-RPC call's id is a JSON value, and the one a replay carries
  // (docs/configuration.md, "JSON-RPC routes").
  if (route.jsonrpc) {
    check(idem::parse_exact_json(id.jsonrpc_id).is_ok(), "a JSON-RPC id that is not JSON", id.jsonrpc_id);
    const std::string replayed = with_jsonrpc_id(request.body, id.jsonrpc_id);
    if (const auto at = top_level_member(request.body, "id")) {
      check(replayed == request.body, "a call's own id does not splice back in place", id.jsonrpc_id);
      const std::string other = with_jsonrpc_id(request.body, "\"other\"");
      const auto again = top_level_member(other, "id");
      check(again && other.substr(again->first, again->second) == "\"other\"",
            "a spliced id is not read back", other);
    }
  } else {
    check(id.jsonrpc_id.empty(), "a JSON-RPC id on another route", id.jsonrpc_id);
  }
  // Every replay route fingerprints, `none` included (a fingerprint that names the rule, so
  // that a record of another rule is refused); a lock has nothing to protect.
  check(id.fingerprint.size() == (route.mode == Mode::replay ? 16u : 0u), "fingerprint size", route.name);
  if (route.mode == Mode::replay && route.policy.fingerprint.kind == FingerprintRule::Kind::none)
    check(id.fingerprint == none_fingerprint(), "a none fingerprint that is not the rule's", route.name);
}

// Whether the route reads the body other than as JSON: then re-serializing it changes
// what the route sees. A query parameter is looked for in a form body too.
bool reads_raw_body(const Route& route) {
  if (route.mode == Mode::replay && route.policy.fingerprint.kind == FingerprintRule::Kind::body) return true;
  auto uses_form = [](const KeyTemplate& t) {
    return t.uses(KeyTemplate::Source::form) || t.uses(KeyTemplate::Source::query);
  };
  if (route.key.kind == KeyRule::Kind::templated && uses_form(route.key.key_template)) return true;
  for (const KeyTemplate& t : route.policy.fingerprint.fields) {
    if (uses_form(t)) return true;
  }
  return false;
}

// Structured Field strings round-trip: a valid key sent quoted reads back as itself.
void check_key_header(std::string_view value) {
  Result<std::string> key = idem::parse_key_header(value);
  if (!key) return;
  check(idem::is_valid_key(*key), "parse_key_header gave an invalid key", *key);
  std::string quoted = "\"";
  for (char c : *key) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  quoted += '"';
  Result<std::string> again = idem::parse_key_header(quoted);
  check(again.is_ok() && *again == *key, "a quoted key does not read back", quoted);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const std::vector<Route>& routes = config().routes;
  const std::size_t choice = in.ConsumeIntegralInRange<std::size_t>(0, routes.size());
  std::optional<Route> fuzzed;
  if (choice == routes.size()) {
    fuzzed = fuzzed_route(in);
    if (!fuzzed) return 0;
  }
  const Route& route = fuzzed ? *fuzzed : routes[choice];
  OwnedRequest req = read_request(in, route);
  const RequestView view = req.view();

  for (const HeaderField& h : view.headers) check_key_header(h.value);
  // Route matching over the whole table, as the gateway does it.
  std::optional<RouteMatch> table_match = match_route(routes, view.method, view.target);
  if (table_match) {
    check(table_match->route->path.match(target_path(view.target)).has_value(), "match_route disagrees");
  }

  std::optional<PathParams> params = route.path.match(target_path(view.target));
  if (!params) return 0;  // the gateway never identifies a request against a route it does not match
  const RouteMatch match{&route, std::move(*params)};
  const Decision d = identify_request(match, view);
  check_decision(d, route, view);

  OwnedRequest copy = req;  // other buffers, same bytes
  check(same(d, identify_request(match, copy.view()), true), "the same request decided twice differs");

  // The same JSON body in its canonical form: same key, same json and template fingerprints.
  if (reads_raw_body(route)) return 0;
  Result<std::string> canonical = idem::canonical_json(view.body);
  if (!canonical || *canonical == view.body) return 0;
  copy.body = std::move(*canonical);
  const Decision c = identify_request(match, copy.view());
  const auto too_large = [](const Decision& x) {
    return x.verdict == Verdict::reject && x.rejection.problem == Problem::body_too_large;
  };
  if (too_large(d) || too_large(c)) return 0;
  check(same(d, c, false), "the canonical form of the body decides differently", copy.body);
  return 0;
}
