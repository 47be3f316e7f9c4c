// The config loader on arbitrary text (docs/gateway.md): every input gives either a Config that
// keeps the rules §3.1 states, or a ConfigError reading "source:line: key: reason" — never
// a crash, a hang, a leak or another exception. A loaded config's routes are then matched
// and identify a fixed request, so fuzzed patterns and templates are exercised too.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "gateway/model/config/config.h"
#include "gateway/model/request_identity.h"
#include "gateway/model/route.h"
#include "gateway/model/units.h"

namespace {

using namespace idem::gateway;
using idem::fuzz::check;

constexpr std::string_view kSource = "fuzz.yaml";

// admin.token_env needs a set, non-empty variable; the dictionary names these two.
const bool kEnvironment = [] {
  setenv("IDEM_FUZZ_TOKEN", "fuzz-secret", 1);
  setenv("IDEM_FUZZ_EMPTY", "", 1);
  return true;
}();

void check_error(const ConfigError& e, std::string_view text) {
  check(e.source() == kSource, "ConfigError names another source", e.what());
  check(!e.reason().empty(), "ConfigError without a reason", e.what());
  std::size_t breaks = 0;
  for (char c : text) breaks += (c == '\n' || c == '\r') ? 1 : 0;
  check(e.line() >= 0 && static_cast<std::size_t>(e.line()) <= breaks + 1, "ConfigError line out of range",
        e.what());
  std::string expected = std::string(kSource);
  if (e.line() > 0) expected += ":" + std::to_string(e.line());
  if (!e.key().empty()) expected += ": " + e.key();
  expected += ": " + e.reason();
  check(expected == e.what(), "ConfigError message is not source:line: key: reason", e.what());
  for (char c : expected) {
    check(static_cast<unsigned char>(c) >= 0x20 && c != 0x7F, "a control character in a ConfigError",
          e.what());
  }
}

void check_route(const Route& r) {
  check(!r.name.empty() && !r.methods.empty(), "route without a name or methods", r.name);
  for (const std::string& m : r.methods) {
    for (char c : m) check(!(c >= 'a' && c <= 'z'), "method not upper case", m);
  }
  const Policy& p = r.policy;
  check(p.retention.count() > 0 && p.upstream_timeout.count() > 0,
        "retention and upstream_timeout must be > 0", r.name);
  check(p.lease >= kMinLease, "lease below 100ms", r.name);
  check(p.wait.count() >= 0, "negative wait", r.name);
  for (idem::Duration d : {p.retention, p.lease, p.wait, p.upstream_timeout}) {
    check(d <= idem::kMaxDuration, "a duration above 3650d", r.name);
  }
  check(p.max_body <= idem::kMaxSize && p.max_result <= idem::kMaxSize, "a size above 1GiB", r.name);
  check(p.fingerprint.kind != FingerprintRule::Kind::fields || !p.fingerprint.fields.empty(),
        "an empty list of fingerprint templates", r.name);
  if (r.key.kind == KeyRule::Kind::token) check(r.mode == Mode::replay, "key: token with mode: lock", r.name);
  if (r.key.kind == KeyRule::Kind::templated && r.mode == Mode::replay) {
    check(r.key.key_template.has_placeholders(), "a replay template key without placeholders", r.name);
  }
}

// Sends one request to each route of `c`, at a path its pattern matches, with a method
// it takes; whatever the route says must be a decision, not a crash.
void exercise_routes(const Config& c) {
  const std::string body = R"({"id":"1","out_trade_no":"T1","amount":1.5,"items":[{"sku":"s"}]})";
  const HeaderField headers[] = {
      {"Idempotency-Key", "k1"}, {"Idempotency-Token", "t1"},   {"Content-Type", "application/json"},
      {"X-User-Id", "u1"},       {"Authorization", "Bearer x"}, {"X-Tenant", "t"}};
  for (const Route& r : c.routes) {
    std::string target = idem::fuzz::path_for(r.path.text(), [](int) { return std::string("v"); }) + "?id=1";
    std::optional<RouteMatch> m = match_route(c.routes, r.methods.front(), target);
    if (!m) continue;  // an earlier route with the same pattern, or a pattern "v" cannot match
    RequestView view{r.methods.front(), target, headers, body};
    Decision d = identify_request(*m, view);
    check(d.verdict != Verdict::unprotected || !m->route->required, "unprotected on a required route",
          m->route->name);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)kEnvironment;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  static const bool verbose = std::getenv("IDEM_FUZZ_VERBOSE") != nullptr;  // for triage
  try {
    Config c = load_config_text(text, kSource);
    if (verbose) std::fprintf(stderr, "loaded: %zu routes\n", c.routes.size());
    check(!c.routes.empty(), "a config without routes");
    check(c.tokens.ttl >= std::chrono::seconds(1) && c.tokens.ttl <= idem::kMaxDuration,
          "tokens.ttl below 1s or above 3650d");
    check(c.admin.token_env.empty() == c.admin.token.empty(), "token_env without a token");
    for (const Route& r : c.routes) check_route(r);
    for (const ListenerLimits& l : {c.limits, c.admin.limits}) {
      check(l.connections >= 1 && l.connections_per_client >= 1 && l.connections_per_client <= l.connections,
            "a listener's connection caps out of order");
      check(l.buffered_bodies_per_client <= l.buffered_bodies, "a client's body budget above the listener's");
    }
    check(c.admin.limits.buffered_bodies_per_client >= kAdminBodyLimit,
          "an admin client's body budget below the largest admin body");
    exercise_routes(c);
  } catch (const ConfigError& e) {
    if (verbose) std::fprintf(stderr, "%s\n", e.what());
    check_error(e, text);
  } catch (const std::exception& e) {
    check(false, "an exception other than ConfigError escaped the loader:", e.what());
  }
  return 0;
}
