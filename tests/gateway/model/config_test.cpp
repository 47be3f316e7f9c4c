// The config model and loader: every key is read, every default applies.
// The rules and error messages are in config_rules_test.cpp.
#include "gateway/model/config/config.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

namespace idem::gateway {
namespace {

using namespace std::chrono_literals;

Config load(std::string_view yaml) { return load_config_text(yaml, "idem.yaml"); }

void expect_default_policy(const Policy& p) {
  EXPECT_EQ(p.retention, 24h);
  EXPECT_EQ(p.lease, 60s);
  EXPECT_EQ(p.wait, 5s);
  EXPECT_EQ(p.upstream_timeout, 30s);
  EXPECT_EQ(p.subject.kind, Subject::Kind::none);
  EXPECT_EQ(p.on_store_error, OnStoreError::reject);
  EXPECT_EQ(p.on_duplicate, OnDuplicate::replay);
  EXPECT_EQ(p.on_uncertain, OnUncertain::hold);
  EXPECT_EQ(p.fingerprint.kind, FingerprintRule::Kind::body);
  EXPECT_FALSE(p.cache_5xx);
  EXPECT_EQ(p.max_body, 1024u * 1024u);
  EXPECT_EQ(p.max_result, 1024u * 1024u);
}

void expect_default_route(const Route& r) {
  EXPECT_EQ(r.name, "default");
  EXPECT_EQ(r.methods, (std::vector<std::string>{"POST", "PATCH"}));
  EXPECT_EQ(r.path.text(), "/*");
  EXPECT_TRUE(r.path.is_prefix());
  EXPECT_EQ(r.key.kind, KeyRule::Kind::header);
  EXPECT_EQ(r.key.header, "Idempotency-Key");
  EXPECT_FALSE(r.required);
  EXPECT_EQ(r.mode, Mode::replay);
}

TEST(DefaultConfig, IsWhatServeUpstreamAloneRuns) {
  Config c = default_config();
  EXPECT_EQ(c.listen.to_string(), "127.0.0.1:8080");
  EXPECT_EQ(c.admin.listen.to_string(), "127.0.0.1:9901");
  EXPECT_TRUE(c.admin.token_env.empty());
  EXPECT_TRUE(c.admin.token.empty());
  EXPECT_EQ(c.store, "sqlite:./idem.db");
  EXPECT_FALSE(c.upstream.has_value());
  EXPECT_EQ(c.tokens.ttl, 10min);
  EXPECT_EQ(c.tokens.subject.kind, Subject::Kind::none);
  expect_default_policy(c.defaults);
  ASSERT_EQ(c.routes.size(), 1u);
  expect_default_route(c.routes[0]);
  expect_default_policy(c.routes[0].policy);
}

TEST(LoadConfig, EmptyTextIsTheDefaultConfig) {
  for (std::string_view text : {"", "\n", "# only a comment\n", "---\n"}) {
    Config c = load(text);
    EXPECT_EQ(c.listen.to_string(), "127.0.0.1:8080");
    EXPECT_EQ(c.store, "sqlite:./idem.db");
    ASSERT_EQ(c.routes.size(), 1u);
    expect_default_route(c.routes[0]);
  }
}

TEST(LoadConfig, TopLevelKeys) {
  Config c = load(
      "listen: 0.0.0.0:8081\n"
      "upstream: http://127.0.0.1:9000\n"
      "store: 'memory:'\n"
      "admin:\n"
      "  listen: '[::1]:9902'\n");
  EXPECT_EQ(c.listen, (ListenAddress{"0.0.0.0", 8081}));
  ASSERT_TRUE(c.upstream.has_value());
  EXPECT_EQ(c.upstream->host, "127.0.0.1");
  EXPECT_EQ(c.upstream->port, 9000);
  EXPECT_EQ(c.upstream->base_path, "");
  EXPECT_EQ(c.upstream->text, "http://127.0.0.1:9000");
  EXPECT_EQ(c.store, "memory:");
  EXPECT_EQ(c.admin.listen, (ListenAddress{"::1", 9902}));
}

TEST(LoadConfig, UpstreamIdleTimeout) {
  EXPECT_EQ(load("").upstream_idle, 3s);
  EXPECT_EQ(load("upstream_idle_timeout: 500ms\n").upstream_idle, 500ms);
  EXPECT_EQ(load("upstream_idle_timeout: 0\n").upstream_idle, 0s);  // never reuse
  EXPECT_THROW(load("upstream_idle_timeout: -1s\n"), ConfigError);
  EXPECT_THROW(load("upstream_idle_timeout: soon\n"), ConfigError);
}

TEST(LoadConfig, ReplayCache) {
  EXPECT_EQ(load("").replay_cache.max_bytes, 16u << 20);
  EXPECT_EQ(load("").replay_cache.shared_ttl, 1s);
  const Config c = load("replay_cache: {max_bytes: 8MiB, shared_ttl: 250ms}\n");
  EXPECT_EQ(c.replay_cache.max_bytes, 8u << 20);
  EXPECT_EQ(c.replay_cache.shared_ttl, 250ms);
  EXPECT_EQ(load("replay_cache: {max_bytes: 0, shared_ttl: 0}\n").replay_cache.max_bytes, 0u);  // off
  try {
    load("replay_cache:\n  max_bytes: 1MiB\n  ttl: 1s\n");
    ADD_FAILURE() << "an unknown key was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "idem.yaml:3: replay_cache.ttl: unknown key (expected one of: max_bytes, shared_ttl)")
        << e.what();
  }
  EXPECT_THROW(load("replay_cache: {shared_ttl: -1s}\n"), ConfigError);
  EXPECT_THROW(load("replay_cache: {max_bytes: 2GiB}\n"), ConfigError);
}

TEST(LoadConfig, EveryDefaultsKey) {
  Config c = load(R"(
defaults:
  retention: 7d
  lease: 1.5s
  wait: 0
  upstream_timeout: 250ms
  subject: header-hash:Authorization
  on_store_error: pass
  on_duplicate: reject
  on_uncertain: retry
  fingerprint: json
  cache_5xx: true
  max_body: 64KiB
  max_result: 2048
)");
  const Policy& p = c.defaults;
  EXPECT_EQ(p.retention, std::chrono::hours(24 * 7));
  EXPECT_EQ(p.lease, 1500ms);
  EXPECT_EQ(p.wait, 0s);
  EXPECT_EQ(p.upstream_timeout, 250ms);
  EXPECT_EQ(p.subject, (Subject{Subject::Kind::header_hash, "Authorization"}));
  EXPECT_EQ(p.on_store_error, OnStoreError::pass);
  EXPECT_EQ(p.on_duplicate, OnDuplicate::reject);
  EXPECT_EQ(p.on_uncertain, OnUncertain::retry);
  EXPECT_EQ(p.fingerprint.kind, FingerprintRule::Kind::json);
  EXPECT_TRUE(p.cache_5xx);
  EXPECT_EQ(p.max_body, 64u * 1024u);
  EXPECT_EQ(p.max_result, 2048u);
  // The default route inherits them, and so do tokens their subject.
  ASSERT_EQ(c.routes.size(), 1u);
  EXPECT_EQ(c.routes[0].policy.lease, 1500ms);
  EXPECT_EQ(c.routes[0].policy.subject, p.subject);
  EXPECT_EQ(c.tokens.subject, p.subject);
}

// Sizes in every unit (KB, MB and GB are binary) and durations at their limits, in
// `defaults` and on a route.
TEST(LoadConfig, SizeAndDurationSpellings) {
  Config c = load(R"(
defaults:
  max_body: 1MB
  max_result: 1KB
  lease: 100ms
  retention: 3650d
routes:
  - name: a
    match: {method: POST, path: /a}
    max_body: 1GiB
    max_result: 1GB
    lease: 0.1s
    wait: 3650d
    upstream_timeout: 87600h
  - name: b
    match: {method: POST, path: /b}
    max_body: 1.5KB
    max_result: 512
)");
  EXPECT_EQ(c.defaults.max_body, 1048576u);
  EXPECT_EQ(c.defaults.max_result, 1024u);
  EXPECT_EQ(c.defaults.lease, 100ms);
  EXPECT_EQ(c.defaults.retention, 3650 * 24h);
  ASSERT_EQ(c.routes.size(), 2u);
  const Policy& a = c.routes[0].policy;
  EXPECT_EQ(a.max_body, 1024u * 1024u * 1024u);
  EXPECT_EQ(a.max_result, 1024u * 1024u * 1024u);
  EXPECT_EQ(a.lease, 100ms);
  EXPECT_EQ(a.wait, 3650 * 24h);
  EXPECT_EQ(a.upstream_timeout, 3650 * 24h);
  EXPECT_EQ(a.retention, 3650 * 24h);  // from defaults
  const Policy& b = c.routes[1].policy;
  EXPECT_EQ(b.max_body, 1536u);
  EXPECT_EQ(b.max_result, 512u);
  EXPECT_EQ(b.lease, 100ms);  // from defaults
}

TEST(LoadConfig, ListenForms) {
  Config c = load("listen: ':8080'\nadmin:\n  listen: '[::1]:9902'\n");
  EXPECT_EQ(c.listen, (ListenAddress{"", 8080}));  // every interface
  EXPECT_TRUE(c.listen.every_interface());
  EXPECT_FALSE(c.listen.is_loopback());
  EXPECT_EQ(c.listen.to_string(), ":8080");
  EXPECT_EQ(c.admin.listen, (ListenAddress{"::1", 9902}));
  EXPECT_TRUE(c.admin.listen.is_loopback());
  EXPECT_EQ(c.admin.listen.to_string(), "[::1]:9902");
  EXPECT_EQ(load("listen: :8080\n").listen, (ListenAddress{"", 8080}));  // unquoted, too
  EXPECT_EQ(load("listen: '[::]:80'\n").listen, (ListenAddress{"::", 80}));
  EXPECT_FALSE(load("listen: '[::]:80'\n").listen.every_interface());
  EXPECT_FALSE(load("listen: 0.0.0.0:80\n").listen.every_interface());
}

TEST(LoadConfig, FingerprintForms) {
  EXPECT_EQ(load("defaults: {fingerprint: body}").defaults.fingerprint.kind, FingerprintRule::Kind::body);
  EXPECT_EQ(load("defaults: {fingerprint: none}").defaults.fingerprint.kind, FingerprintRule::Kind::none);
  Config c = load("defaults:\n  fingerprint: [\"{json.amount}\", \"{json.currency}\", \"x-{header.X-A}\"]\n");
  const FingerprintRule& f = c.defaults.fingerprint;
  EXPECT_EQ(f.kind, FingerprintRule::Kind::fields);
  ASSERT_EQ(f.fields.size(), 3u);
  EXPECT_EQ(f.fields[0].text(), "{json.amount}");
  EXPECT_EQ(f.fields[2].text(), "x-{header.X-A}");
}

TEST(LoadConfig, SubjectForms) {
  EXPECT_EQ(load("defaults: {subject: none}").defaults.subject, Subject{});
  EXPECT_EQ(load("defaults: {subject: 'header:X-User-Id'}").defaults.subject,
            (Subject{Subject::Kind::header, "X-User-Id"}));
  EXPECT_EQ(load("defaults: {subject: 'header-hash:Authorization'}").defaults.subject,
            (Subject{Subject::Kind::header_hash, "Authorization"}));
}

// `principal` (docs/configuration.md): unset until written, so that a route with a
// subject binds by it (principal.h, effective_principal).
TEST(LoadConfig, PrincipalForms) {
  EXPECT_FALSE(load("").defaults.principal.has_value());
  EXPECT_EQ(load("defaults: {principal: authorization}").defaults.principal, Principal{});
  EXPECT_EQ(load("defaults: {principal: none}").defaults.principal, (Principal{Principal::Kind::none, {}}));
  EXPECT_EQ(load("defaults: {principal: 'header:X-Api-Client'}").defaults.principal,
            (Principal{Principal::Kind::header, "X-Api-Client"}));
  EXPECT_EQ(load("defaults: {subject: 'header:X-User-Id', principal: subject}").routes[0].policy.principal,
            (Principal{Principal::Kind::subject, {}}));
  EXPECT_THROW(load("defaults: {principal: bearer}"), ConfigError);
  EXPECT_THROW(load("defaults: {principal: 'header:'}"), ConfigError);
  EXPECT_THROW(load("defaults: {principal: 'header:Connection'}"), ConfigError);
  EXPECT_THROW(load("routes:\n  - name: a\n    match: {method: POST, path: /a}\n    principal: subject\n"),
               ConfigError)
      << "principal: subject needs a subject";
}

TEST(LoadConfig, Tokens) {
  Config c = load("tokens:\n  ttl: 90s\n  subject: header:X-User-Id\n");
  EXPECT_EQ(c.tokens.ttl, 90s);
  EXPECT_EQ(c.tokens.subject, (Subject{Subject::Kind::header, "X-User-Id"}));
  EXPECT_EQ(load("tokens: {ttl: 1s}").tokens.ttl, 1s);
  EXPECT_EQ(c.tokens.path, "/_idem/tokens");
  EXPECT_EQ(c.tokens.max_live, 100'000u);
  EXPECT_EQ(c.tokens.per_client, 60u);
  Config bounded = load("tokens:\n  path: /api/form-tokens\n  max_live: 5000\n  per_client: 0\n");
  EXPECT_EQ(bounded.tokens.path, "/api/form-tokens");
  EXPECT_EQ(bounded.tokens.max_live, 5000u);
  EXPECT_EQ(bounded.tokens.per_client, 0u);
  EXPECT_EQ(bounded.tokens.limits().ttl, 10min);
}

// The tokens endpoint is served only where some route takes tokens.
TEST(LoadConfig, IssuesTokensOnlyWithATokenRoute) {
  EXPECT_FALSE(load("").issues_tokens());
  EXPECT_FALSE(load("routes:\n  - name: o\n    match: {method: POST, path: /o}\n").issues_tokens());
  EXPECT_TRUE(load("routes:\n  - name: o\n    match: {method: POST, path: /o}\n"
                   "  - name: f\n    match: {method: POST, path: /f}\n    key: token\n")
                  .issues_tokens());
}

TEST(LoadConfig, TrustedProxies) {
  EXPECT_TRUE(load("").trusted_proxies.empty());
  Config c = load("trusted_proxies: [10.0.0.0/8, 192.0.2.7, \"fd00::/8\", \"::1\"]\n");
  ASSERT_EQ(c.trusted_proxies.ranges().size(), 4u);
  EXPECT_TRUE(c.trusted_proxies.contains("10.1.2.3"));
  EXPECT_TRUE(c.trusted_proxies.contains("192.0.2.7"));
  EXPECT_FALSE(c.trusted_proxies.contains("192.0.2.8"));
  EXPECT_TRUE(c.trusted_proxies.contains("fd00::9"));
  EXPECT_TRUE(c.trusted_proxies.contains("::1"));
  EXPECT_FALSE(c.trusted_proxies.contains("127.0.0.1"));
}

// The full example configuration of the product contract, verbatim.
constexpr std::string_view kSpecExample = R"(
listen: 127.0.0.1:8080              # client-facing listener
upstream: http://127.0.0.1:9000     # the protected service (http only)
store: sqlite:./idem.db             # see 3.6; this is the default
admin:
  listen: 127.0.0.1:9901            # health, metrics, records, control API
  token_env: IDEM_ADMIN_TOKEN       # bearer token for records and control API
defaults:                           # every route inherits these
  retention: 24h                    # how long a completed result is replayed
  lease: 60s                        # how long a pending claim is held (renewed while the upstream works)
  wait: 5s                          # how long a concurrent duplicate waits for the first; 0 = answer 409 at once
  upstream_timeout: 30s
  subject: none                     # none | header:NAME | header-hash:NAME  (scopes keys per user/tenant)
  on_store_error: reject            # reject (503) | pass (forward unprotected)
  on_duplicate: replay              # replay | reject (409 duplicate, for "do not resubmit" forms)
  on_uncertain: hold                # hold (409 outcome-uncertain until an operator decides) | retry (run again, higher fence)
  fingerprint: body                 # body | json | none | a list of templates (see 3.2)
  cache_5xx: false                  # true: store 5xx responses too (Stripe-style); false: release so a retry runs
  max_body: 1MiB                    # largest request body accepted on protected routes (413 above)
  max_result: 1MiB                  # largest response body stored for replay
tokens:
  ttl: 10m                          # lifetime of a one-time token from POST /_idem/tokens
  subject: header:X-User-Id         # binds tokens to a user; defaults to defaults.subject
routes:
  - name: create-order
    match: { method: POST, path: /orders }
    key: header:Idempotency-Key     # client-chosen key (the default)
    required: true
  - name: submit-form
    match: { method: POST, path: /forms/* }
    key: token                      # server-issued one-time token, sent as Idempotency-Token
  - name: pay-callback
    match: { method: POST, path: /pay/callback }
    key: "pay:{json.out_trade_no}"  # business key built from the request
    subject: none
  - name: deduct-stock
    match: { method: POST, path: "/skus/{sku}/deduct" }
    key: "stock:{path.sku}"
    mode: lock                      # mutual exclusion only: no replay
)";

TEST(LoadConfig, SpecExample) {
  ::setenv("IDEM_ADMIN_TOKEN", "s3cret", 1);
  Config c = load(kSpecExample);
  ::unsetenv("IDEM_ADMIN_TOKEN");
  EXPECT_EQ(c.admin.token_env, "IDEM_ADMIN_TOKEN");
  EXPECT_EQ(c.admin.token, "s3cret");
  expect_default_policy(c.defaults);
  ASSERT_EQ(c.routes.size(), 4u);

  const Route& order = c.routes[0];
  EXPECT_EQ(order.name, "create-order");
  EXPECT_EQ(order.methods, std::vector<std::string>{"POST"});
  EXPECT_EQ(order.path.text(), "/orders");
  EXPECT_EQ(order.key.kind, KeyRule::Kind::header);
  EXPECT_EQ(order.key.header, "Idempotency-Key");
  EXPECT_TRUE(order.required);
  EXPECT_EQ(order.mode, Mode::replay);

  const Route& form = c.routes[1];
  EXPECT_EQ(form.key.kind, KeyRule::Kind::token);
  EXPECT_TRUE(form.path.is_prefix());
  // A token route takes tokens.subject.
  EXPECT_EQ(form.policy.subject, (Subject{Subject::Kind::header, "X-User-Id"}));

  const Route& pay = c.routes[2];
  EXPECT_EQ(pay.key.kind, KeyRule::Kind::templated);
  EXPECT_EQ(pay.key.key_template.text(), "pay:{json.out_trade_no}");
  EXPECT_EQ(pay.policy.subject.kind, Subject::Kind::none);

  const Route& stock = c.routes[3];
  EXPECT_EQ(stock.mode, Mode::lock);
  EXPECT_TRUE(stock.path.has_param("sku"));
  EXPECT_EQ(stock.key.key_template.text(), "stock:{path.sku}");
}

TEST(LoadConfig, RouteDefaultsAndOverrides) {
  Config c = load(R"(
defaults:
  lease: 10s
  subject: header:X-Tenant
routes:
  - name: a
    match: {method: [post, PUT], path: /a}
  - name: b
    match: {method: POST, path: /b}
    key: header:X-Request-Id
    required: false
    retention: 1h
    lease: 2s
    wait: 0
    upstream_timeout: 5s
    subject: header-hash:Authorization
    on_store_error: pass
    on_duplicate: reject
    on_uncertain: retry
    fingerprint: ["{json.amount}", "{path.none_here_is_fine_in_lock_mode_only}"]
    cache_5xx: true
    max_body: 1KiB
    max_result: 0
    mode: lock
)");
  ASSERT_EQ(c.routes.size(), 2u);
  const Route& a = c.routes[0];
  EXPECT_EQ(a.methods, (std::vector<std::string>{"POST", "PUT"}));
  EXPECT_EQ(a.key.kind, KeyRule::Kind::header);
  EXPECT_TRUE(a.required);
  EXPECT_EQ(a.policy.lease, 10s);
  EXPECT_EQ(a.policy.retention, 24h);
  EXPECT_EQ(a.policy.subject, (Subject{Subject::Kind::header, "X-Tenant"}));

  const Route& b = c.routes[1];
  EXPECT_EQ(b.key.header, "X-Request-Id");
  EXPECT_FALSE(b.required);
  EXPECT_EQ(b.mode, Mode::lock);
  EXPECT_EQ(b.policy.retention, 1h);
  EXPECT_EQ(b.policy.lease, 2s);
  EXPECT_EQ(b.policy.wait, 0s);
  EXPECT_EQ(b.policy.upstream_timeout, 5s);
  EXPECT_EQ(b.policy.subject, (Subject{Subject::Kind::header_hash, "Authorization"}));
  EXPECT_EQ(b.policy.on_store_error, OnStoreError::pass);
  EXPECT_EQ(b.policy.on_duplicate, OnDuplicate::reject);
  EXPECT_EQ(b.policy.on_uncertain, OnUncertain::retry);
  EXPECT_EQ(b.policy.fingerprint.kind, FingerprintRule::Kind::fields);
  EXPECT_TRUE(b.policy.cache_5xx);
  EXPECT_EQ(b.policy.max_body, 1024u);
  EXPECT_EQ(b.policy.max_result, 0u);
  // Overrides stay on their route.
  EXPECT_EQ(c.defaults.lease, 10s);
}

TEST(LoadConfig, ConstantKeyIsAllowedForLocks) {
  Config c = load("routes:\n  - {name: l, match: {method: POST, path: /x}, key: global-lock, mode: lock}\n");
  EXPECT_EQ(c.routes[0].key.kind, KeyRule::Kind::templated);
  EXPECT_FALSE(c.routes[0].key.key_template.has_placeholders());
}

TEST(LoadConfig, EmptyRoutesListIsTheDefaultRoute) {
  for (std::string_view text : {"routes: []", "routes:"}) {
    Config c = load(text);
    ASSERT_EQ(c.routes.size(), 1u);
    expect_default_route(c.routes[0]);
  }
}

TEST(LoadConfig, UpstreamForms) {
  auto up = [](std::string_view url) { return *load("upstream: " + std::string(url)).upstream; };
  EXPECT_EQ(up("http://svc").port, 80);
  EXPECT_EQ(up("http://svc").host, "svc");
  EXPECT_EQ(up("http://svc:8000/api/v1/").base_path, "/api/v1");
  EXPECT_EQ(up("http://svc:8000/").base_path, "");
  EXPECT_EQ(up("'http://[::1]:9000'").host, "::1");
  EXPECT_EQ(up("HTTP://Svc:1").port, 1);
}

TEST(LoadConfigFile, ReadsTheFileAndNamesItInErrors) {
  std::string path = ::testing::TempDir() + "gateway_config_test.yaml";
  {
    std::ofstream out(path);
    out << "listen: 127.0.0.1:1234\nupstream: http://127.0.0.1:9000\n";
  }
  EXPECT_EQ(load_config_file(path).listen.port, 1234);
  {
    std::ofstream out(path);
    out << "listen: 127.0.0.1:1234\nlisten2: x\n";
  }
  try {
    (void)load_config_file(path);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.source(), path);
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(std::string(e.what()).rfind(path + ":2: listen2: unknown key", 0), 0u) << e.what();
  }
  std::remove(path.c_str());
  try {
    (void)load_config_file(path);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": cannot open the file: No such file or directory");
  }
}

}  // namespace
}  // namespace idem::gateway

namespace idem::gateway {
namespace {

// An environment of the test's own, so nothing depends on the process's variables.
ConfigEnvironment env_of(std::map<std::string, std::string> vars, bool strict = true,
                         std::vector<ConfigError>* warnings = nullptr) {
  return {.lookup = [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
            auto it = vars.find(name);
            if (it == vars.end()) return std::nullopt;
            return it->second;
          },
          .strict = strict,
          .warnings = warnings};
}

std::string error_of(std::string_view yaml, const ConfigEnvironment& env) {
  try {
    load_config_text(yaml, "idem.yaml", env);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// docs/configuration.md, "Secrets from the environment".
TEST(ConfigEnvironment, NamesAreReplacedInEveryStringValue) {
  const auto env =
      env_of({{"PG_PASSWORD", "pa%2Fss-w0rd"}, {"PORT", "8081"}, {"KEY_HEADER", "X-Request-Key"}});
  Config c = load_config_text(
      "listen: 127.0.0.1:${PORT}\n"
      "store: postgres://idem:${PG_PASSWORD}@db.internal:5432/idem\n"
      "routes:\n"
      "  - name: a\n"
      "    match: {method: POST, path: /a}\n"
      "    key: header:${KEY_HEADER}\n",
      "idem.yaml", env);
  EXPECT_EQ(c.listen.port, 8081);
  EXPECT_EQ(c.store, "postgres://idem:pa%2Fss-w0rd@db.internal:5432/idem");
  EXPECT_EQ(c.routes.at(0).key.header, "X-Request-Key");
}

TEST(ConfigEnvironment, DollarDollarBraceIsALiteralAndALoneDollarIsItself) {
  const auto env = env_of({{"A", "1"}});
  Config c = load_config_text("store: \"sqlite:/var/lib/$${A}/$/${A}$\"\n", "idem.yaml", env);
  // `$${A}` stays `${A}` (not read again), `${A}` is 1.
  EXPECT_EQ(c.store, "sqlite:/var/lib/${A}/$/1$");
}

// The value is used as it is: a password in a store URI must be percent-encoded where URIs
// require it, and the error says so without showing it.
TEST(ConfigEnvironment, AVariableInAStoreUriIsNotEncodedAndNeverShown) {
  const std::string e =
      error_of("store: postgres://idem:${PG_PASSWORD}@db:5432/idem\n", env_of({{"PG_PASSWORD", "s3cr/et"}}));
  EXPECT_NE(e.find("idem.yaml:1: store: "), std::string::npos) << e;
  EXPECT_NE(e.find("percent-encoded"), std::string::npos) << e;
  EXPECT_EQ(e.find("s3cr"), std::string::npos) << e;
}

TEST(ConfigEnvironment, AValueIsNotExpandedTwice) {
  // A secret that happens to hold `${...}` is used as it is.
  const auto env = env_of({{"DIR", "/srv/${OTHER}"}, {"OTHER", "no"}});
  Config c = load_config_text("store: sqlite:${DIR}/idem.db\n", "idem.yaml", env);
  EXPECT_EQ(c.store, "sqlite:/srv/${OTHER}/idem.db");
}

TEST(ConfigEnvironment, AnUnsetVariableIsAnErrorNamingItFileLineAndKey) {
  EXPECT_EQ(error_of("listen: 127.0.0.1:8080\nstore: redis://:${REDIS_PASSWORD}@h:6379\n", env_of({})),
            "idem.yaml:2: store: the environment variable REDIS_PASSWORD is not set");
  EXPECT_EQ(error_of("admin:\n  token_env: IDEM_ADMIN_TOKEN\n", env_of({})),
            "idem.yaml:2: admin.token_env: the environment variable IDEM_ADMIN_TOKEN is not set");
  // Set but empty: a secret that is empty is a mistake, in every mode.
  EXPECT_EQ(error_of("admin:\n  token_env: T\n", env_of({{"T", ""}}, false)),
            "idem.yaml:2: admin.token_env: the environment variable T is empty");
}

TEST(ConfigEnvironment, MalformedReferencesAreErrors) {
  for (const char* yaml : {"store: \"sqlite:${X\"\n", "store: \"sqlite:${}\"\n", "store: \"sqlite:${1X}\"\n",
                           "store: \"sqlite:${A-B}\"\n", "store: \"sqlite:${json.id}\"\n"}) {
    const std::string e = error_of(yaml, env_of({{"X", "x"}}));
    EXPECT_NE(e.find("idem.yaml:1: store: "), std::string::npos) << yaml << " -> " << e;
    EXPECT_NE(e.find("$${"), std::string::npos) << "the error tells how to write a literal: " << e;
  }
}

TEST(ConfigEnvironment, LenientModeWarnsAndReadsUnsetAsEmpty) {
  std::vector<ConfigError> warnings;
  const auto env = env_of({}, false, &warnings);
  Config c = load_config_text(
      "store: postgres://idem:${PG_PASSWORD}@db:5432/idem\n"
      "admin:\n"
      "  listen: 10.0.0.1:9901\n"
      "  token_env: IDEM_ADMIN_TOKEN\n",
      "idem.yaml", env);
  EXPECT_EQ(c.store, "postgres://idem:@db:5432/idem");
  // A token is configured all the same, so the non-loopback admin is not refused for it.
  EXPECT_EQ(c.admin.token_env, "IDEM_ADMIN_TOKEN");
  EXPECT_FALSE(c.admin.token.empty());
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_STREQ(warnings[0].what(), "idem.yaml:1: store: the environment variable PG_PASSWORD is not set");
  EXPECT_STREQ(warnings[1].what(),
               "idem.yaml:4: admin.token_env: the environment variable IDEM_ADMIN_TOKEN is not set");
}

// A value that is nothing but an unset variable is empty under `idem check`: it is warned
// of and not validated (docs/configuration.md, "Secrets from the environment"); strict
// loading (serve, check --strict) names the variable.
TEST(ConfigEnvironment, LenientModeDoesNotValidateAValueWithAnUnsetVariable) {
  std::vector<ConfigError> warnings;
  const std::string yaml = "store: \"${IDEM_STORE}\"\nupstream: \"${IDEM_UPSTREAM}\"\n";
  Config c = load_config_text(yaml, "idem.yaml", env_of({}, false, &warnings));
  EXPECT_FALSE(c.upstream);
  ASSERT_EQ(warnings.size(), 2u);
  // Read in the loader's order: upstream, then store.
  EXPECT_STREQ(warnings[0].what(),
               "idem.yaml:2: upstream: the environment variable IDEM_UPSTREAM is not set");
  EXPECT_STREQ(warnings[1].what(), "idem.yaml:1: store: the environment variable IDEM_STORE is not set");
  try {
    (void)load_config_text(yaml, "idem.yaml", env_of({}, true, nullptr));
    ADD_FAILURE() << "strict loading accepted an unset variable";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "idem.yaml:2: upstream: the environment variable IDEM_UPSTREAM is not set");
  }
  // A value that is set is validated as ever.
  warnings.clear();
  EXPECT_THROW((void)load_config_text(yaml, "idem.yaml", env_of({{"IDEM_STORE", "nope"}}, false, &warnings)),
               ConfigError);
}

TEST(ConfigEnvironment, TheProcessEnvironmentByDefault) {
  ::setenv("IDEM_CONFIG_TEST_STORE", "memory:", 1);
  Config c = load_config_text("store: ${IDEM_CONFIG_TEST_STORE}\n", "idem.yaml");
  ::unsetenv("IDEM_CONFIG_TEST_STORE");
  EXPECT_EQ(c.store, "memory:");
}

}  // namespace
}  // namespace idem::gateway
