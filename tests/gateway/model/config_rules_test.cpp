// Every way a config can be wrong, with the message it gets: "file:line: key: reason".
#include <cstdlib>

#include <gtest/gtest.h>

#include "gateway/model/config/config.h"

namespace idem::gateway {
namespace {

// what() of the ConfigError that loading `yaml` throws, or "no error".
std::string error(std::string_view yaml) {
  try {
    (void)load_config_text(yaml, "idem.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

bool starts_with(const std::string& text, std::string_view prefix) { return text.rfind(prefix, 0) == 0; }

#define EXPECT_ERROR(yaml, prefix) EXPECT_PRED2(starts_with, error(yaml), prefix)

TEST(ConfigError, MessageShape) {
  EXPECT_STREQ(ConfigError("idem.yaml", 12, "routes[1].match.path", "must start with '/'").what(),
               "idem.yaml:12: routes[1].match.path: must start with '/'");
  EXPECT_STREQ(ConfigError("", 0, "--upstream", "bad").what(), "--upstream: bad");
  EXPECT_STREQ(ConfigError("idem.yaml", 3, "", "invalid YAML: x").what(), "idem.yaml:3: invalid YAML: x");
  EXPECT_STREQ(ConfigError("idem.yaml", 0, "", "cannot open").what(), "idem.yaml: cannot open");
  ConfigError e("f", 2, "k", "r");
  EXPECT_EQ(e.source(), "f");
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.key(), "k");
  EXPECT_EQ(e.reason(), "r");
}

// Found by config_fuzz (fuzz/regressions/config/nul_in_error_message): a NUL that yaml-cpp
// quotes in its message cut what() short; other control characters would reach the terminal.
TEST(ConfigError, ControlCharactersAreWrittenAsHex) {
  ConfigError e("f\n", 1, "a\x01", std::string("b\0c\x1b[31m\x7f", 9));
  EXPECT_STREQ(e.what(), "f\\x0a:1: a\\x01: b\\x00c\\x1b[31m\\x7f");
  EXPECT_EQ(e.key(), "a\\x01");
  EXPECT_EQ(e.reason(), "b\\x00c\\x1b[31m\\x7f");
  EXPECT_EQ(error(std::string_view("\x01x: 1\n", 6)),
            "idem.yaml:1: \\x01x: unknown key (expected one of: listen, upstream, upstream_idle_timeout, "
            "upstream_tls, upstreams, store, admin, limits, defaults, "
            "tokens, replay_cache, routes, trusted_proxies, jwt, tls)");
  const char nul_escape[] = "up/127.020.1 \0\0\0\0\0\0\0.020.1:9000\n";
  EXPECT_EQ(error(std::string_view(nul_escape, sizeof nul_escape - 1)),
            "idem.yaml:1: invalid YAML: unknown escape character: \\x00");
  EXPECT_ERROR("k\xc3\xa9: 1", "idem.yaml:1: k\xc3\xa9: unknown key");  // UTF-8 stays as written
}

TEST(ConfigRules, TheExampleOfTheBrief) {
  EXPECT_EQ(error(R"(routes:
  - name: a
    match: {method: POST, path: /a}
  - name: b
    match:
      method: POST
      path: orders
)"),
            "idem.yaml:7: routes[1].match.path: must start with '/'");
}

TEST(ConfigRules, YamlSyntaxErrorsNameFileAndLine) {
  EXPECT_ERROR("listen: 127.0.0.1:8080\nroutes:\n  - name: [a\n", "idem.yaml:4: invalid YAML: ");
  EXPECT_ERROR("a: b\n  c: d\n", "idem.yaml:2: invalid YAML: ");
  EXPECT_EQ(
      error("listen: 127.0.0.1:8080\nstore: memory:\n"),
      "idem.yaml:2: invalid YAML: illegal map value (quote a value that holds ': ' or ends in ':', such as "
      "store: \"memory:\")");
  EXPECT_ERROR("listen: \"unterminated\n", "idem.yaml:");
  EXPECT_EQ(error("listen: 127.0.0.1:1\n---\nlisten: 127.0.0.1:2\n"),
            "idem.yaml:3: more than one YAML document; a config is one");
  EXPECT_EQ(error("listen: 127.0.0.1:1\n---\n---\n# nothing\n"), "no error");  // empty documents after it
}

// yaml-cpp 0.7's LoadAll never returns for these (jbeder/yaml-cpp#1040), and Load quietly
// drops what follows the ',' (",listen: x" would load as an empty config).
TEST(ConfigRules, StrayCommaIsAnErrorNotAHang) {
  EXPECT_EQ(error(",listen: 127.0.0.1:1\n"), "idem.yaml:1: invalid YAML: unexpected ','");
  EXPECT_EQ(error(","), "idem.yaml:1: invalid YAML: unexpected ','");
  EXPECT_EQ(error("- a\n,\n"), "idem.yaml:2: invalid YAML: unexpected ','");
  EXPECT_EQ(error("routes:\n  - name: a\n    match: {method: POST, path: /a}\n,\n"),
            "idem.yaml:4: invalid YAML: end of map not found");
}

// The client listener's `tls` (docs/configuration.md, "TLS on the client listener"): both
// files named, as read; the files themselves are loaded by idem check and idem serve.
TEST(ConfigRules, TlsNamesBothFiles) {
  const Config c = load_config_text("tls:\n  cert_file: a.pem\n  key_file: k.pem\n", "idem.yaml");
  EXPECT_TRUE(c.tls.on());
  EXPECT_EQ(c.tls.cert_file, "a.pem");
  EXPECT_EQ(c.tls.key_file, "k.pem");
  EXPECT_EQ(c.tls.key_line, 3);
  EXPECT_FALSE(load_config_text("", "idem.yaml").tls.on());
  EXPECT_EQ(error("tls:\n  cert_file: a.pem\n"),
            "idem.yaml:2: tls: needs both cert_file and key_file (key_file is missing)");
  EXPECT_EQ(error("tls:\n  key_file: k.pem\n"),
            "idem.yaml:2: tls: needs both cert_file and key_file (cert_file is missing)");
  EXPECT_EQ(error("tls:\n  cert_file: \"\"\n  key_file: k.pem\n"),
            "idem.yaml:2: tls.cert_file: must name a file");
  EXPECT_ERROR("tls:\n  cert_file: a.pem\n  key_file: k.pem\n  ciphers: x\n",
               "idem.yaml:4: tls.ciphers: unknown key (expected one of: cert_file, key_file)");
}

TEST(ConfigRules, UnknownKeysAnywhere) {
  EXPECT_EQ(error("listen: 127.0.0.1:8080\nlistne: 1\n"),
            "idem.yaml:2: listne: unknown key (expected one of: listen, upstream, upstream_idle_timeout, "
            "upstream_tls, upstreams, store, admin, limits, defaults, "
            "tokens, replay_cache, routes, trusted_proxies, jwt, tls)");
  EXPECT_ERROR("admin:\n  token: x\n",
               "idem.yaml:2: admin.token: unknown key (expected one of: listen, token_env, tokens, limits)");
  EXPECT_ERROR(
      "limits:\n  connection: 1\n",
      "idem.yaml:2: limits.connection: unknown key (expected one of: connections, "
      "connections_per_client, buffered_bodies, buffered_bodies_per_client, header_timeout, body_timeout)");
  EXPECT_ERROR("defaults:\n  lease: 1s\n  leese: 2s\n", "idem.yaml:3: defaults.leese: unknown key");
  EXPECT_ERROR(
      "tokens:\n  tll: 1m\n",
      "idem.yaml:2: tokens.tll: unknown key (expected one of: ttl, subject, path, max_live, per_client)");
  EXPECT_ERROR("routes:\n  - name: a\n    match: {method: POST, path: /a}\n    requried: false\n",
               "idem.yaml:4: routes[0].requried: unknown key");
  EXPECT_ERROR(
      "routes:\n  - name: a\n    match: {method: POST, path: /a, host: x}\n",
      "idem.yaml:3: routes[0].match.host: unknown key (expected one of: method, path, format_suffix)");
  // tokens keys are not route keys.
  EXPECT_ERROR("routes:\n  - name: a\n    match: {method: POST, path: /a}\n    ttl: 1m\n",
               "idem.yaml:4: routes[0].ttl: unknown key");
}

TEST(ConfigRules, RepeatedKeys) {
  EXPECT_EQ(error("defaults:\n  lease: 1s\n  lease: 2s\n"),
            "idem.yaml:3: defaults.lease: repeated key (first set on line 2)");
}

TEST(ConfigRules, WrongShapes) {
  EXPECT_EQ(error("- a\n- b\n"),
            "idem.yaml:1: expected a mapping of settings (listen, upstream, store, routes, ...)");
  EXPECT_EQ(error("listen: [a]\n"), "idem.yaml:1: listen: expected HOST:PORT or :PORT, got a list");
  EXPECT_EQ(error("store:\n"), "idem.yaml:1: store: needs a value: a store URI such as sqlite:./idem.db");
  EXPECT_EQ(error("defaults: 5\n"), "idem.yaml:1: defaults: expected a mapping of keys");
  EXPECT_EQ(error("routes: {name: a}\n"), "idem.yaml:1: routes: expected a list");
  EXPECT_EQ(error("routes:\n  - just-a-name\n"),
            "idem.yaml:2: routes[0]: expected a route: a mapping with name and match");
  EXPECT_EQ(error("defaults:\n  cache_5xx: maybe\n"),
            "idem.yaml:2: defaults.cache_5xx: expected true or false, got 'maybe'");
  EXPECT_EQ(error("defaults:\n  on_duplicate: ignore\n"),
            "idem.yaml:2: defaults.on_duplicate: expected replay, reject, got 'ignore'");
  EXPECT_EQ(error("defaults:\n  on_store_error: [reject]\n"),
            "idem.yaml:2: defaults.on_store_error: expected one of reject, pass, got a list");
  EXPECT_EQ(error("defaults:\n  on_uncertain: wait\n"),
            "idem.yaml:2: defaults.on_uncertain: expected hold, retry, got 'wait'");
  EXPECT_EQ(error("defaults:\n  max_body: 1mb\n"),
            "idem.yaml:2: defaults.max_body: size \"1mb\": unknown unit (use B, KiB/KB, MiB/MB or GiB/GB)");
  EXPECT_EQ(error("defaults:\n  max_result: -1\n"),
            "idem.yaml:2: defaults.max_result: size \"-1\": must not be negative");
}

TEST(ConfigRules, Durations) {
  EXPECT_EQ(error("defaults:\n  lease: 0\n"), "idem.yaml:2: defaults.lease: must be at least 100ms");
  EXPECT_EQ(error("defaults:\n  retention: 0s\n"), "idem.yaml:2: defaults.retention: must be greater than 0");
  EXPECT_EQ(error("defaults:\n  upstream_timeout: 0ms\n"),
            "idem.yaml:2: defaults.upstream_timeout: must be greater than 0");
  EXPECT_EQ(error("defaults:\n  wait: 0\n"), "no error");  // only wait may be 0
  EXPECT_EQ(error("defaults:\n  wait: -1s\n"),
            "idem.yaml:2: defaults.wait: duration \"-1s\": must not be negative");
  EXPECT_EQ(error("defaults:\n  lease: 60\n"),
            "idem.yaml:2: defaults.lease: duration \"60\": no unit (use ms, s, m, h or d)");
  EXPECT_EQ(error("tokens:\n  ttl: 999ms\n"), "idem.yaml:2: tokens.ttl: must be at least 1s");
  EXPECT_EQ(error("tokens:\n  ttl: 0\n"), "idem.yaml:2: tokens.ttl: must be at least 1s");
  EXPECT_EQ(error("tokens:\n  ttl: 1s\n"), "no error");
  // Route-level values follow the same rules.
  EXPECT_EQ(error("routes:\n  - name: a\n    match: {method: POST, path: /a}\n    lease: 0\n"),
            "idem.yaml:4: routes[0].lease: must be at least 100ms");
}

// A policy key set in `defaults` (line 2) and on a route (line 4), and what loading says.
std::string policy_error(std::string_view key, std::string_view value, bool on_route) {
  const std::string line = std::string(key) + ": " + std::string(value) + "\n";
  return error(on_route ? "routes:\n  - name: a\n    match: {method: POST, path: /a}\n    " + line
                        : "defaults:\n  " + line);
}

// Each duration key at its edges, in `defaults` and on a route: the least value accepted
// and the one below it refused, 3650d accepted and one unit more refused.
TEST(ConfigRules, DurationBounds) {
  struct Bounds {
    const char* key;
    const char* least;  // the smallest value accepted
    const char* below;  // just below it
    const char* rule;   // the message for `below`
  };
  for (const Bounds& b : {Bounds{"retention", "0.001ms", "0.0004ms", "must be greater than 0"},
                          Bounds{"lease", "100ms", "99ms", "must be at least 100ms"},
                          Bounds{"upstream_timeout", "0.001ms", "0.0004ms", "must be greater than 0"},
                          Bounds{"wait", "0", "-1ms", "duration \"-1ms\": must not be negative"}}) {
    for (bool on_route : {false, true}) {
      const std::string at = on_route ? "idem.yaml:4: routes[0]." + std::string(b.key) + ": "
                                      : "idem.yaml:2: defaults." + std::string(b.key) + ": ";
      SCOPED_TRACE(at);
      EXPECT_EQ(policy_error(b.key, b.least, on_route), "no error");
      EXPECT_EQ(policy_error(b.key, b.below, on_route), at + b.rule);
      for (const char* most : {"3650d", "87600h", "315360000s"}) {
        EXPECT_EQ(policy_error(b.key, most, on_route), "no error") << most;
      }
      EXPECT_EQ(policy_error(b.key, "3651d", on_route), at + "duration \"3651d\": at most 3650d");
      EXPECT_EQ(policy_error(b.key, "87601h", on_route), at + "duration \"87601h\": at most 3650d");
      EXPECT_EQ(policy_error(b.key, "315360001s", on_route), at + "duration \"315360001s\": at most 3650d");
    }
  }
  // Only wait may be 0.
  for (const char* key : {"retention", "lease", "upstream_timeout"}) {
    for (const char* zero : {"0", "0s", "0ms", "0.0d"}) {
      EXPECT_NE(policy_error(key, zero, false), "no error") << key << ": " << zero;
      EXPECT_NE(policy_error(key, zero, true), "no error") << key << ": " << zero;
    }
  }
  EXPECT_EQ(policy_error("wait", "0s", true), "no error");
  EXPECT_EQ(error("tokens:\n  ttl: 1s\n"), "no error");
  EXPECT_EQ(error("tokens:\n  ttl: 999ms\n"), "idem.yaml:2: tokens.ttl: must be at least 1s");
  EXPECT_EQ(error("tokens:\n  ttl: 0.9999994s\n"), "idem.yaml:2: tokens.ttl: must be at least 1s");
  EXPECT_EQ(error("tokens:\n  ttl: 3650d\n"), "no error");
  EXPECT_EQ(error("tokens:\n  ttl: 3651d\n"), "idem.yaml:2: tokens.ttl: duration \"3651d\": at most 3650d");
}

// Found by hand: 106751991d, the most that 64 bits of microseconds hold, overflowed
// `now + retention` (expires_at), so every record was already expired and replay was
// silently off.
TEST(ConfigRules, HugeRetentionIsRefused) {
  EXPECT_EQ(error("defaults:\n  retention: 106751991d\n"),
            "idem.yaml:2: defaults.retention: duration \"106751991d\": at most 3650d");
  EXPECT_EQ(error("routes:\n  - name: a\n    match: {method: POST, path: /a}\n    retention: 106751991d\n"),
            "idem.yaml:4: routes[0].retention: duration \"106751991d\": at most 3650d");
}

// Found by hand: a lease of 0.4ms had the claim renewed (every lease / 3) every 133µs, a
// busy loop against the store.
TEST(ConfigRules, SubMillisecondLeaseIsRefused) {
  EXPECT_EQ(error("defaults:\n  lease: 0.4ms\n"), "idem.yaml:2: defaults.lease: must be at least 100ms");
  EXPECT_EQ(error("routes:\n  - name: a\n    match: {method: POST, path: /a}\n    lease: 0.4ms\n"),
            "idem.yaml:4: routes[0].lease: must be at least 100ms");
  EXPECT_EQ(policy_error("lease", "0.1s", false), "no error");
  EXPECT_EQ(policy_error("lease", "0.0999s", false), "idem.yaml:2: defaults.lease: must be at least 100ms");
  EXPECT_EQ(policy_error("lease", "99.9994ms", false), "idem.yaml:2: defaults.lease: must be at least 100ms");
  EXPECT_EQ(policy_error("lease", "99.9995ms", false), "no error");  // rounds to 100ms
}

// Each size key at its edges, in `defaults` and on a route.
TEST(ConfigRules, SizeBounds) {
  for (const char* key : {"max_body", "max_result"}) {
    for (bool on_route : {false, true}) {
      const std::string at = on_route ? "idem.yaml:4: routes[0]." + std::string(key) + ": "
                                      : "idem.yaml:2: defaults." + std::string(key) + ": ";
      SCOPED_TRACE(at);
      for (const char* ok : {"0", "1GiB", "1GB", "1024MiB", "1024MB", "1048576KiB", "1073741824"}) {
        EXPECT_EQ(policy_error(key, ok, on_route), "no error") << ok;
      }
      EXPECT_EQ(policy_error(key, "1025MiB", on_route), at + "size \"1025MiB\": at most 1GiB");
      EXPECT_EQ(policy_error(key, "1073741825", on_route), at + "size \"1073741825\": at most 1GiB");
      EXPECT_EQ(policy_error(key, "2GB", on_route), at + "size \"2GB\": at most 1GiB");
      EXPECT_EQ(policy_error(key, "1TiB", on_route),
                at + "size \"1TiB\": unknown unit (use B, KiB/KB, MiB/MB or GiB/GB)");
      EXPECT_EQ(policy_error(key, "1.5", on_route),
                at + "size \"1.5\": a number of bytes must be whole (or give a unit: B, KiB, MiB, GiB)");
      EXPECT_EQ(policy_error(key, "1 MB", on_route),
                at + "size \"1 MB\": unknown unit (use B, KiB/KB, MiB/MB or GiB/GB)");
    }
  }
}

// What clients may hold of each listener (docs/configuration.md, "Connections and bodies"):
// the defaults, a per-client cap left out within the listener's, a client's share of the
// body budget that holds the largest body the listener reads, and the mistakes.
TEST(ConfigRules, ListenerLimits) {
  const Config plain = load_config_text("", "idem.yaml");
  EXPECT_EQ(plain.limits, kClientLimits);
  EXPECT_EQ(plain.admin.limits, kAdminLimits);
  EXPECT_EQ(plain.limits, (ListenerLimits{4096, 256, 256u << 20, 32u << 20}));
  EXPECT_EQ(plain.admin.limits, (ListenerLimits{1024, 256, 64u << 20, 16u << 20}));

  // Left out, a client's share holds the largest max_body (within buffered_bodies).
  const auto route = [](const char* max_body) {
    return std::string("routes:\n  - name: up\n    match: {method: POST, path: /up}\n    max_body: ") +
           max_body + "\n";
  };
  EXPECT_EQ(load_config_text(route("64MiB"), "idem.yaml").limits.buffered_bodies_per_client, 64u << 20);
  EXPECT_EQ(load_config_text(route("512MiB"), "idem.yaml").limits.buffered_bodies_per_client, 256u << 20);
  const Config set = load_config_text(
      "limits:\n  connections: 100\n  buffered_bodies: 8MiB\nadmin:\n  limits:\n    connections: 8\n",
      "idem.yaml");
  EXPECT_EQ(set.limits, (ListenerLimits{100, 100, 8u << 20, 8u << 20}));
  EXPECT_EQ(set.admin.limits, (ListenerLimits{8, 8, 64u << 20, 16u << 20}));

  for (const char* bad : {"0", "x", "-1", "1.5", "1048577", "99999999999999999999999"})
    EXPECT_EQ(
        error(std::string("limits:\n  connections: ") + bad + "\n"),
        std::string("idem.yaml:2: limits.connections: expected a whole number from 1 to 1048576, got '") +
            bad + "'");
  EXPECT_EQ(error("limits:\n  connections: 10\n  connections_per_client: 11\n"),
            "idem.yaml:3: limits.connections_per_client: must be at most connections (10)");
  EXPECT_EQ(error("limits:\n  buffered_bodies: 8MiB\n  buffered_bodies_per_client: 9MiB\n"),
            "idem.yaml:3: limits.buffered_bodies_per_client: must be at most buffered_bodies (8MiB)");
  EXPECT_EQ(
      error("limits:\n  buffered_bodies_per_client: 8MiB\n" + route("64MiB")),
      "idem.yaml:2: limits.buffered_bodies_per_client: 8MiB cannot hold the largest body route 'up' takes "
      "(max_body 64MiB), so no such body could be received: raise it, or lower max_body");
  EXPECT_EQ(error("limits:\n  buffered_bodies: 512KiB\n"),
            "idem.yaml:2: limits.buffered_bodies: 512KiB cannot hold the largest body route 'default' takes "
            "(max_body 1MiB), so no such body could be received: raise it, or lower max_body");
  EXPECT_EQ(
      error("admin:\n  limits:\n    buffered_bodies_per_client: 1023KiB\n"),
      "idem.yaml:3: admin.limits.buffered_bodies_per_client: 1023KiB cannot hold the largest admin request "
      "body (1MiB), so no such body could be received: raise it");

  // How long a client may take to send a head and a body: 10 s and 30 s unless set, from 1 s
  // to an hour, for each listener.
  EXPECT_EQ(plain.limits.header_timeout, Duration(std::chrono::seconds(10)));
  EXPECT_EQ(plain.limits.body_timeout, Duration(std::chrono::seconds(30)));
  EXPECT_EQ(plain.admin.limits.body_timeout, Duration(std::chrono::seconds(30)));
  const Config slow = load_config_text(
      "limits:\n  header_timeout: 20s\n  body_timeout: 5m\nadmin:\n  limits:\n    header_timeout: 2s\n",
      "idem.yaml");
  EXPECT_EQ(slow.limits.header_timeout, Duration(std::chrono::seconds(20)));
  EXPECT_EQ(slow.limits.body_timeout, Duration(std::chrono::minutes(5)));
  EXPECT_EQ(slow.admin.limits.header_timeout, Duration(std::chrono::seconds(2)));
  EXPECT_EQ(slow.admin.limits.body_timeout, Duration(std::chrono::seconds(30)));
  EXPECT_EQ(error("limits:\n  header_timeout: 500ms\n"),
            "idem.yaml:2: limits.header_timeout: must be at least 1s");
  EXPECT_EQ(error("limits:\n  body_timeout: 0\n"), "idem.yaml:2: limits.body_timeout: must be at least 1s");
  EXPECT_EQ(error("admin:\n  limits:\n    body_timeout: 2h\n"),
            "idem.yaml:3: admin.limits.body_timeout: must be at most 1h");
}

TEST(ConfigRules, Addresses) {
  EXPECT_EQ(
      error("listen: 127.0.0.1\n"),
      "idem.yaml:1: listen: expected HOST:PORT or :PORT, such as 127.0.0.1:8080 or :8080, got '127.0.0.1'");
  EXPECT_EQ(error("listen: 8080\n"),
            "idem.yaml:1: listen: expected HOST:PORT or :PORT, such as 127.0.0.1:8080 or :8080, got '8080'");
  EXPECT_EQ(error("listen: 127.0.0.1:65536\n"), "idem.yaml:1: listen: port 65536 is above 65535");
  EXPECT_EQ(error("listen: 127.0.0.1:http\n"),
            "idem.yaml:1: listen: port 'http' is not a number from 0 to 65535");
  EXPECT_EQ(error("listen: '::1:80'\n"),
            "idem.yaml:1: listen: an IPv6 address is written in brackets, such as [::1]:8080");
  EXPECT_EQ(error("listen: 300.1.1.1:80\n"), "idem.yaml:1: listen: '300.1.1.1' is not an IPv4 address");
  EXPECT_EQ(error("listen: localhost:0\n"), "no error");
  EXPECT_EQ(error("listen: '[::]:65535'\n"), "no error");
  EXPECT_EQ(error("listen: '[::1]:8080'\n"), "no error");
  // :PORT is every interface.
  EXPECT_EQ(error("listen: ':80'\n"), "no error");
  EXPECT_EQ(error("listen: ':0'\n"), "no error");
  EXPECT_EQ(error("listen: ':65535'\n"), "no error");
  EXPECT_EQ(error("listen: ':65536'\n"), "idem.yaml:1: listen: port 65536 is above 65535");
  EXPECT_EQ(error("listen: ':'\n"), "idem.yaml:1: listen: missing port");
  EXPECT_EQ(error("listen: ':http'\n"), "idem.yaml:1: listen: port 'http' is not a number from 0 to 65535");
  EXPECT_EQ(error("listen: '::80'\n"),
            "idem.yaml:1: listen: an IPv6 address is written in brackets, such as [::1]:8080");
  EXPECT_EQ(error("listen: ' :80'\n"), "idem.yaml:1: listen: ' ' is not an IP address or a host name");
  // Brackets hold an IPv6 address, followed by :PORT.
  EXPECT_EQ(error("listen: '[::1]'\n"), "idem.yaml:1: listen: expected HOST:PORT, such as [::1]:8080");
  EXPECT_EQ(error("listen: '[::1]8080'\n"), "idem.yaml:1: listen: expected HOST:PORT, such as [::1]:8080");
  EXPECT_EQ(error("listen: '[::1]:'\n"), "idem.yaml:1: listen: missing port");
  EXPECT_EQ(error("listen: '[::1:8080'\n"), "idem.yaml:1: listen: '[' without ']' in '[::1:8080'");
  EXPECT_EQ(error("listen: '[127.0.0.1]:80'\n"), "idem.yaml:1: listen: '127.0.0.1' is not an IPv6 address");
  EXPECT_EQ(error("listen: '[]:80'\n"), "idem.yaml:1: listen: '' is not an IPv6 address");
  EXPECT_EQ(error("listen: 127.0.0.1:9901\n"),
            "idem.yaml:1: listen: the admin listener cannot share the address of listen (127.0.0.1:9901)");
  EXPECT_EQ(
      error("listen: ':9901'\n"),
      "idem.yaml:1: listen: the admin listener (127.0.0.1:9901) and listen (:9901) cannot share a port when "
      "one is on every interface");
}

TEST(ConfigRules, Upstream) {
  EXPECT_EQ(error("upstream: https://svc\n"), "no error");  // TLS (docs/gateway.md, "TLS to upstreams")
  EXPECT_EQ(error("upstream: ftp://svc\n"),
            "idem.yaml:1: upstream: scheme 'ftp' is not supported: http:// or https://");
  EXPECT_EQ(error("upstream: svc:9000\n"),
            "idem.yaml:1: upstream: scheme 'svc' is not supported: http:// or https://");
  EXPECT_EQ(error("upstream: 127.0.0.1:9000\n"),
            "idem.yaml:1: upstream: '127.0.0.1:9000' is not an absolute URL, such as http://127.0.0.1:9000");
  EXPECT_EQ(error("upstream: http://u:p@svc\n"),
            "idem.yaml:1: upstream: user info (user:password@) is not supported in the upstream URL");
  EXPECT_EQ(error("upstream: http://svc/?a=1\n"),
            "idem.yaml:1: upstream: the upstream URL may not have a query or a fragment");
  EXPECT_EQ(error("upstream: http://svc:0\n"),
            "idem.yaml:1: upstream: upstream port 0 is not a port one can connect to");
  EXPECT_EQ(error("upstream: http:///path\n"), "idem.yaml:1: upstream: the upstream URL has no host");
}

TEST(ConfigRules, Store) {
  EXPECT_ERROR("store: mssql://x\n", "idem.yaml:1: store: unknown store scheme 'mssql' (expected memory:");
  EXPECT_EQ(error("store: 'mysql:db'\n"),
            "idem.yaml:1: store: mysql: needs a host, such as mysql://127.0.0.1:3306");
  EXPECT_ERROR("store: idem.db\n", "idem.yaml:1: store: 'idem.db' has no scheme");
  EXPECT_EQ(error("store: 'sqlite:'\n"),
            "idem.yaml:1: store: sqlite: needs a file path, such as sqlite:./idem.db");
  EXPECT_EQ(error("store: memory:x\n"), "idem.yaml:1: store: memory: takes no parameters");
  for (std::string_view ok :
       {"memory:", "sqlite:/var/lib/idem.db?sync=full", "redis://127.0.0.1:6379/0", "redis-cluster://a:1,b:2",
        "postgres://u:p@h:5432/db", "mysql://u:p@h:3306/db", "redis+sentinel://a:26379,b/mymaster/1?wait=1",
        "rediss://h:6380?tls_ca=/etc/ca.pem", "rediss-cluster://a:1,b:2", "rediss+sentinel://s/m"}) {
    EXPECT_EQ(error("store: '" + std::string(ok) + "'\n"), "no error") << ok;
  }
}

// Redis URIs are parsed whole, as opening the store parses them (docs/configuration.md,
// "Stores"), so a mistake is named when the config is read; the password never is.
TEST(ConfigRules, RedisStoreUrisAreParsedWhole) {
  EXPECT_ERROR(
      "store: redis+sentinel://:s3cret@a:26379\n",
      "idem.yaml:1: store: redis: no master name: redis+sentinel:// names the master after the sentinels "
      "(/mymaster) in store URI 'redis+sentinel://:***@a:26379'");
  EXPECT_ERROR("store: 'redis://h?tls_ca=/ca.pem'\n",
               "idem.yaml:1: store: redis: tls_* parameters need TLS: write the scheme rediss://");
  EXPECT_ERROR("store: 'redis://h?wait=x'\n", "idem.yaml:1: store: redis: wait='x' is not a number");
  EXPECT_ERROR("store: 'redis+sentinel://h/m/x'\n",
               "idem.yaml:1: store: redis: database 'x' is not a number");
  // Where an unset variable left the password out, the URI is not held against it (idem
  // check warns about the variable; idem serve refuses to start without it).
  ::unsetenv("IDEM_GW_TEST_REDIS_PASSWORD");
  std::vector<ConfigError> warnings;
  EXPECT_NO_THROW(load_config_text("store: 'redis+sentinel://:${IDEM_GW_TEST_REDIS_PASSWORD}@s/m'\n",
                                   "idem.yaml", {.strict = false, .warnings = &warnings}));
  EXPECT_EQ(warnings.size(), 1u);
}

TEST(ConfigRules, AdminTokenEnv) {
  ::unsetenv("IDEM_GW_TEST_TOKEN");
  EXPECT_EQ(error("admin:\n  token_env: IDEM_GW_TEST_TOKEN\n"),
            "idem.yaml:2: admin.token_env: the environment variable IDEM_GW_TEST_TOKEN is not set");
  ::setenv("IDEM_GW_TEST_TOKEN", "", 1);
  EXPECT_EQ(error("admin:\n  token_env: IDEM_GW_TEST_TOKEN\n"),
            "idem.yaml:2: admin.token_env: the environment variable IDEM_GW_TEST_TOKEN is empty");
  ::setenv("IDEM_GW_TEST_TOKEN", "t0ken", 1);
  Config c =
      load_config_text("admin:\n  listen: 0.0.0.0:9901\n  token_env: IDEM_GW_TEST_TOKEN\n", "idem.yaml");
  EXPECT_EQ(c.admin.token, "t0ken");
  EXPECT_EQ(c.admin.token_env, "IDEM_GW_TEST_TOKEN");
  ::unsetenv("IDEM_GW_TEST_TOKEN");
  // Without a token the admin listener stays on loopback.
  EXPECT_EQ(error("admin:\n  listen: 0.0.0.0:9901\n"),
            "idem.yaml:2: admin.listen: a non-loopback admin address needs admin.token_env or admin.tokens "
            "(records and the "
            "control API would be open to the network)");
  EXPECT_EQ(error("admin:\n  listen: '[::1]:9901'\n"), "no error");
  EXPECT_EQ(error("admin:\n  listen: localhost:9901\n"), "no error");
  EXPECT_EQ(error("admin:\n  listen: 127.1.2.3:9901\n"), "no error");
  EXPECT_EQ(error("admin:\n  listen: ':9901'\n"),  // every interface is not loopback
            "idem.yaml:2: admin.listen: a non-loopback admin address needs admin.token_env or admin.tokens "
            "(records and the "
            "control API would be open to the network)");
}

TEST(ConfigRules, SubjectAndFingerprintValues) {
  EXPECT_EQ(error("defaults:\n  subject: user\n"),
            "idem.yaml:2: defaults.subject: expected none, header:NAME, header-hash:NAME or jwt, got 'user'");
  EXPECT_EQ(error("defaults:\n  subject: 'header:'\n"),
            "idem.yaml:2: defaults.subject: '' is not a header name");
  EXPECT_EQ(error("tokens:\n  subject: header-hash:a b\n"),
            "idem.yaml:2: tokens.subject: 'a b' is not a header name");
  EXPECT_EQ(error("defaults:\n  fingerprint: sha256\n"),
            "idem.yaml:2: defaults.fingerprint: expected body, json, none or a list of templates such as "
            "[\"{json.amount}\"], got 'sha256'");
  EXPECT_EQ(error("defaults:\n  fingerprint: []\n"),
            "idem.yaml:2: defaults.fingerprint: an empty list of templates; give some, or write none");
  EXPECT_EQ(error("defaults:\n  fingerprint:\n    - '{json.a}'\n    - amount\n"),
            "idem.yaml:4: defaults.fingerprint[1]: a template without {placeholders} is the same for every "
            "request");
  EXPECT_EQ(error("defaults:\n  fingerprint: ['{json.a']\n"),
            "idem.yaml:2: defaults.fingerprint[0]: '{' at position 1 is not closed");
}

TEST(ConfigRules, RouteFields) {
  const std::string head = "routes:\n  - name: a\n";
  EXPECT_EQ(error("routes:\n  - match: {method: POST, path: /a}\n"), "idem.yaml:2: routes[0].name: required");
  EXPECT_EQ(error(head), "idem.yaml:2: routes[0].match: required");
  EXPECT_EQ(error(head + "    match: {path: /a}\n"), "idem.yaml:3: routes[0].match.method: required");
  EXPECT_EQ(error(head + "    match: {method: POST}\n"), "idem.yaml:3: routes[0].match.path: required");
  EXPECT_EQ(error("routes:\n  - name: 'a b'\n    match: {method: POST, path: /a}\n"),
            "idem.yaml:2: routes[0].name: a route name is letters, digits, '-', '_' and '.'");
  EXPECT_EQ(error(head + "    match: {method: [], path: /a}\n"),
            "idem.yaml:3: routes[0].match.method: an empty list of methods matches nothing");
  EXPECT_EQ(error(head + "    match:\n      method: [POST, 'GE T']\n      path: /a\n"),
            "idem.yaml:4: routes[0].match.method[1]: 'GE T' is not an HTTP method");
  EXPECT_EQ(error(head + "    match: {method: POST, path: /a/*/b}\n"),
            "idem.yaml:3: routes[0].match.path: '*' is allowed only as a trailing \"/*\" (a prefix match)");
  EXPECT_EQ(error(head + "    match: {method: POST, path: /a}\n    mode: exclusive\n"),
            "idem.yaml:4: routes[0].mode: expected replay, lock, jsonrpc, got 'exclusive'");
  EXPECT_EQ(error(head + "    match: {method: POST, path: /a}\n    required: 1\n"),
            "idem.yaml:4: routes[0].required: expected true or false, got '1'");
  EXPECT_EQ(
      error(head + "    match:\n      method: POST\n      path: /a/*\n      format_suffix: true\n"),
      "idem.yaml:6: routes[0].match.format_suffix: format_suffix is for a pattern that ends in a segment: a "
      "prefix pattern (\"/*\") matches every path below it already");
  EXPECT_EQ(error(head + "    match: {method: POST, path: /a, format_suffix: yes}\n"),
            "idem.yaml:3: routes[0].match.format_suffix: expected true or false, got 'yes'");
  const Config c = load_config_text(
      head + "    match: {method: POST, path: \"/a/{id}\", format_suffix: true}\n", "x.yaml");
  EXPECT_TRUE(c.routes[0].path.format_suffix());
  EXPECT_EQ(c.routes[0].path.match("/a/7.json"), (PathParams{{"id", "7"}}));
}

// A field the gateway never forwards (hop-by-hop: RFC 9110 §7.6.1) cannot identify a request
// the service sees (docs/gateway.md, "One request, one reading").
TEST(ConfigRules, NoRouteReadsAHopByHopField) {
  const std::string head = "routes:\n  - name: a\n    match: {method: POST, path: /a}\n";
  const std::string why =
      " is a hop-by-hop field, which the gateway never forwards: the service would not see the value the "
      "request "
      "is identified by";
  EXPECT_EQ(error(head + "    subject: header-hash:Proxy-Authorization\n"),
            "idem.yaml:4: routes[0].subject: Proxy-Authorization" + why);
  EXPECT_EQ(error(head + "    key: header:Connection\n"), "idem.yaml:4: routes[0].key: Connection" + why);
  EXPECT_EQ(error(head + "    key: \"{header.keep-alive}:{json.id}\"\n"),
            "idem.yaml:4: routes[0].key: keep-alive" + why);
  EXPECT_EQ(error(head + "    fingerprint: [\"{header.TE}\"]\n"),
            "idem.yaml:4: routes[0].fingerprint[0]: TE" + why);
  EXPECT_EQ(error("defaults:\n  subject: header:Upgrade\n"), "idem.yaml:2: defaults.subject: Upgrade" + why);
}

TEST(ConfigRules, DuplicateRouteNames) {
  EXPECT_EQ(error(R"(routes:
  - name: a
    match: {method: POST, path: /a}
  - name: b
    match: {method: POST, path: /b}
  - name: a
    match: {method: POST, path: /c}
)"),
            "idem.yaml:6: routes[2].name: route name 'a' is already used by routes[0]");
}

TEST(ConfigRules, TrustedProxies) {
  EXPECT_EQ(error("trusted_proxies: [10.0.0.0/8, proxy.internal]\n"),
            "idem.yaml:1: trusted_proxies[1]: 'proxy.internal' is not an IPv4 or IPv6 address");
  EXPECT_EQ(
      error("trusted_proxies:\n  - 10.0.0.1/8\n"),
      "idem.yaml:2: trusted_proxies[0]: '10.0.0.1/8' has address bits set past its /8 prefix (the range "
      "is 10.0.0.0/8)");
  EXPECT_EQ(error("trusted_proxies:\n  - ::1/129\n"),
            "idem.yaml:2: trusted_proxies[0]: '::1/129': the prefix length must be a number from 0 to 128");
  EXPECT_EQ(error("trusted_proxies: 10.0.0.0/8\n"), "idem.yaml:1: trusted_proxies: expected a list");
  EXPECT_EQ(error("trusted_proxies: []\n"), "no error");
}

TEST(ConfigRules, TokensEndpoint) {
  EXPECT_EQ(error("tokens:\n  path: _idem/tokens\n"), "idem.yaml:2: tokens.path: must start with '/'");
  EXPECT_EQ(error("tokens:\n  path: /_idem/tokens?x=1\n"),
            "idem.yaml:2: tokens.path: may hold letters, digits and -._~!$&'()*+,;=:@/ only (no "
            "percent-encoding or "
            "query)");
  EXPECT_EQ(error("tokens:\n  path: /a%2Fb\n"),
            "idem.yaml:2: tokens.path: may hold letters, digits and -._~!$&'()*+,;=:@/ only (no "
            "percent-encoding or "
            "query)");
  EXPECT_EQ(error("tokens:\n  path: /a//b\n"), "idem.yaml:2: tokens.path: has an empty segment ('//')");
  EXPECT_EQ(error("tokens:\n  path: /a/../b\n"), "idem.yaml:2: tokens.path: has a dot segment");
  EXPECT_EQ(error("tokens:\n  max_live: 0\n"),
            "idem.yaml:2: tokens.max_live: expected a whole number from 1 to 100000000, got '0'");
  EXPECT_EQ(error("tokens:\n  max_live: 1e6\n"),
            "idem.yaml:2: tokens.max_live: expected a whole number from 1 to 100000000, got '1e6'");
  EXPECT_EQ(error("tokens:\n  per_client: -1\n"),
            "idem.yaml:2: tokens.per_client: expected a whole number from 0 to 100000000, got '-1'");
  EXPECT_EQ(error("tokens:\n  per_client: 100000001\n"),
            "idem.yaml:2: tokens.per_client: expected a whole number from 0 to 100000000, got '100000001'");
  EXPECT_EQ(error("tokens: {path: /x/tokens, max_live: 1, per_client: 0}\n"), "no error");
}

TEST(ConfigRules, TokenRoutes) {
  const std::string head =
      "routes:\n  - name: f\n    match: {method: POST, path: /forms/*}\n    key: token\n";
  EXPECT_EQ(error(head + "    mode: lock\n"),
            "idem.yaml:5: routes[0].mode: lock cannot be used with key: token");
  EXPECT_EQ(
      error(head + "    subject: header:X-User\n"),
      "idem.yaml:5: routes[0].subject: a token route takes its subject from tokens.subject; remove it here");
  EXPECT_EQ(error(head + "    mode: replay\n"), "no error");
}

TEST(ConfigRules, KeyTemplates) {
  const std::string head = "routes:\n  - name: a\n    match: {method: POST, path: '/skus/{sku}'}\n";
  EXPECT_EQ(error(head + "    key: 'pay:{json.out_trade_no'\n"),
            "idem.yaml:4: routes[0].key: '{' at position 5 is not closed");
  EXPECT_EQ(error(head + "    key: 'pay:}'\n"), "idem.yaml:4: routes[0].key: '}' at position 5 has no '{'");
  EXPECT_EQ(error(head + "    key: '{body.id}'\n"),
            "idem.yaml:4: routes[0].key: unknown placeholder {body.id} (expected json.*, header.*, query.*, "
            "path.*, form.* or subject): did you mean {json.id}?");
  EXPECT_EQ(
      error(head + "    key: 'sku:{json.items[0].sku}'\n"),
      "idem.yaml:4: routes[0].key: {json.items[0].sku} never renders: array elements are fields by index, "
      "and the path starts after json.: did you mean {json.items.0.sku}?");
  EXPECT_EQ(error(head + "    key: '{json}'\n"),
            "idem.yaml:4: routes[0].key: {json} needs a name: {json.NAME}");
  EXPECT_EQ(error(head + "    key: '{path.id}'\n"),
            "idem.yaml:4: routes[0].key: {path.id} is not a parameter of match.path \"/skus/{sku}\"");
  EXPECT_EQ(error(head + "    key: 'u:{subject}'\n"),
            "idem.yaml:4: routes[0].key: {subject} needs a subject (header:NAME or header-hash:NAME)");
  EXPECT_EQ(error(head + "    key: 'u:{subject}'\n    subject: header:X-User\n"), "no error");
  EXPECT_EQ(error(head + "    key: Idempotency-Key\n"),
            "idem.yaml:4: routes[0].key: a key without {placeholders} is the same for every request (write "
            "header:NAME for a key sent in a header)");
  EXPECT_EQ(error(head + "    key: 'order {json.id}'\n"),
            "idem.yaml:4: routes[0].key: keys are visible ASCII: the template's text may not hold spaces or "
            "other characters");
  EXPECT_EQ(error(head + "    key: 'stock:{path.sku}'\n"), "no error");
}

TEST(ConfigRules, KeyPlaceholdersNeedASeparator) {
  const std::string head = "routes:\n  - name: r\n    match: {method: POST, path: /pay}\n";
  EXPECT_EQ(error(head + "    key: '{header.X-Tenant}:{json.id}'\n"), "no error");
  EXPECT_EQ(
      error(head + "    key: '{json.a}{json.b}'\n"),
      "idem.yaml:4: routes[0].key: {json.a} and {json.b} must be separated by text holding a character "
      "other than letters, digits, '-', '.', '_' and '~' (such as ':'), or two different requests could "
      "render the same key");
  EXPECT_NE(error(head + "    key: 'x:{json.a}-{json.b}'\n"), "no error");
  // Fingerprint templates are fingerprinted one value each: no separator needed.
  EXPECT_EQ(error(head + "    key: 'p:{json.id}'\n    fingerprint: ['{json.a}{json.b}']\n"), "no error");
}

TEST(ConfigRules, KeySpaces) {
  const std::string head = "routes:\n  - name: create.order-1\n    match: {method: POST, path: /o}\n";
  Config c =
      load_config_text(head +
                           "  - name: pay-a\n    match: {method: POST, path: /a}\n    key_space: pay\n"
                           "  - name: pay-b\n    match: {method: POST, path: /b}\n    key_space: pay\n",
                       "idem.yaml");
  ASSERT_EQ(c.routes.size(), 3u);
  EXPECT_EQ(c.routes[0].key_space, "create.order-1");  // the name by default
  EXPECT_EQ(c.routes[1].key_space, "pay");
  EXPECT_EQ(c.routes[2].key_space, "pay");  // shared
  EXPECT_EQ(load_config_text("listen: 127.0.0.1:0\n", "idem.yaml").routes.at(0).key_space, "default");
  const std::string why = "a key space is 1-64 letters, digits, '-', '_' and '.'";
  EXPECT_EQ(error(head + "    key_space: 'a:b'\n"), "idem.yaml:4: routes[0].key_space: " + why);
  EXPECT_EQ(error(head + "    key_space: ''\n"), "idem.yaml:4: routes[0].key_space: " + why);
  EXPECT_EQ(error(head + "    key_space: " + std::string(65, 'k') + "\n"),
            "idem.yaml:4: routes[0].key_space: " + why);
  EXPECT_EQ(error(head + "    key_space: " + std::string(64, 'k') + "\n"), "no error");
  EXPECT_EQ(error(head + "    key_space: [a]\n").substr(0, 30), "idem.yaml:4: routes[0].key_spa");
  // A route's name is its key space unless it has one: a longer name would store keys longer
  // than every store holds (idem/limits.h).
  const auto named = [](const std::string& name) {
    return "routes:\n  - name: " + name + "\n    match: {method: POST, path: /o}\n";
  };
  EXPECT_EQ(error(named(std::string(64, 'n'))), "no error");
  EXPECT_EQ(error(named(std::string(65, 'n'))),
            "idem.yaml:2: routes[0].name: a route's records are kept under its name, and a key space is at "
            "most 64 characters: give this route a shorter name or a key_space");
  EXPECT_EQ(error(named(std::string(65, 'n')) + "    key_space: short\n"), "no error");
}

// require_store_holds_results's error for a store holding `store_max` bytes, or "no error".
std::string store_error(const Config& c, std::uint64_t store_max) {
  try {
    require_store_holds_results(c, store_max, "mysql");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

// The store opened for a config must hold each route's max_result and the response's headers
// (kStoredHeadersMargin); the error names the line that set max_result, or the route.
TEST(ConfigRules, EveryRoutesMaxResultFitsInTheStore) {
  const Config c = load_config_text(R"(defaults:
  max_result: 2MiB
routes:
  - name: a
    match: {method: POST, path: /a}
  - name: b
    match: {method: POST, path: /b}
    max_result: 3MiB
)",
                                    "idem.yaml");
  EXPECT_EQ(store_error(c, (3 << 20) + kStoredHeadersMargin), "no error");
  EXPECT_EQ(
      store_error(c, (3 << 20) + kStoredHeadersMargin - 1),
      "idem.yaml:8: routes[1].max_result: route 'b' stores responses of up to 3145728 bytes, and the mysql "
      "store holds results of 3211263 bytes: a response body of at most 3145727 bytes with its headers "
      "(docs/stores.md, \"Sizes\"); lower max_result");
  EXPECT_EQ(store_error(c, 2 << 20).substr(0, 47), "idem.yaml:2: defaults.max_result: route 'a' sto");
  EXPECT_EQ(store_error(c, 0).substr(0, 33), "idem.yaml:2: defaults.max_result:");
  // A max_result nobody set (1MiB) has no line: the route names it.
  const Config plain =
      load_config_text("routes:\n  - name: c\n    match: {method: POST, path: /c}\n", "idem.yaml");
  EXPECT_EQ(store_error(plain, 1 << 20).substr(0, 52),
            "routes[0].max_result: route 'c' stores responses of ");
}

TEST(ConfigRules, DefaultTemplatesAreCheckedAgainstEveryRoute) {
  EXPECT_EQ(error(R"(defaults:
  fingerprint: ["{path.sku}"]
routes:
  - name: with-sku
    match: {method: POST, path: "/skus/{sku}"}
  - name: without
    match: {method: POST, path: /orders}
)"),
            "idem.yaml:2: defaults.fingerprint[0]: {path.sku} is not a parameter of match.path \"/orders\" "
            "of route 'without'");
  EXPECT_EQ(error("defaults:\n  fingerprint: ['{path.x}']\n"),
            "idem.yaml:2: defaults.fingerprint[0]: {path.x} is not a parameter of match.path \"/*\" of route "
            "'default'");
  EXPECT_EQ(error("defaults:\n  fingerprint: ['{subject}']\n"),
            "idem.yaml:2: defaults.fingerprint[0]: {subject} needs a subject (header:NAME or "
            "header-hash:NAME), and route 'default' has none");
  // A route's own fingerprint replaces the default one.
  EXPECT_EQ(error(R"(defaults:
  fingerprint: ["{path.sku}"]
routes:
  - name: without
    match: {method: POST, path: /orders}
    fingerprint: json
)"),
            "no error");
}

TEST(CliOverrides, ReplaceTheFileSettings) {
  Config c = default_config();
  apply_overrides(c, {":80", "http://svc:9000/base", "memory:", "[::1]:9999"});
  EXPECT_EQ(c.listen, (ListenAddress{"", 80}));  // every interface
  EXPECT_TRUE(c.listen.every_interface());
  ASSERT_TRUE(c.upstream.has_value());
  EXPECT_EQ(c.upstream->host, "svc");
  EXPECT_EQ(c.store, "memory:");
  EXPECT_EQ(c.admin.listen, (ListenAddress{"::1", 9999}));
  c = default_config();
  apply_overrides(c, {"0.0.0.0:80", "http://svc:9000/base", "memory:", "127.0.0.1:9999"});
  EXPECT_EQ(c.listen, (ListenAddress{"0.0.0.0", 80}));
  ASSERT_TRUE(c.upstream.has_value());
  EXPECT_EQ(c.upstream->host, "svc");
  EXPECT_EQ(c.upstream->base_path, "/base");
  EXPECT_EQ(c.store, "memory:");
  EXPECT_EQ(c.admin.listen, (ListenAddress{"127.0.0.1", 9999}));
  // Unset flags change nothing.
  Config before = c;
  apply_overrides(c, {});
  EXPECT_EQ(c.listen, before.listen);
  EXPECT_EQ(c.store, before.store);
}

TEST(CliOverrides, ErrorsNameTheFlag) {
  auto flag_error = [](CliOverrides flags) -> std::string {
    Config c = default_config();
    try {
      apply_overrides(c, flags);
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.line(), 0);
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(flag_error({.upstream = "ftp://svc"}),
            "--upstream: scheme 'ftp' is not supported: http:// or https://");
  EXPECT_EQ(flag_error({.listen = "8080"}),
            "--listen: expected HOST:PORT or :PORT, such as 127.0.0.1:8080 or :8080, got '8080'");
  EXPECT_EQ(flag_error({.admin = ":9901"}),
            "--admin: a non-loopback admin address needs admin.token_env or admin.tokens (records and the "
            "control API would be "
            "open to the network)");
  // A listener on every interface shares its port with no other.
  EXPECT_EQ(
      flag_error({.listen = ":9901"}),
      "--listen: the admin listener (127.0.0.1:9901) and listen (:9901) cannot share a port when one is on "
      "every interface");
  EXPECT_EQ(flag_error({.listen = ":9902"}), "no error");
  EXPECT_EQ(flag_error({.store = "mssql:x"}).rfind("--store: unknown store scheme 'mssql'", 0), 0u);
  EXPECT_EQ(flag_error({.admin = "0.0.0.0:9901"}),
            "--admin: a non-loopback admin address needs admin.token_env or admin.tokens (records and the "
            "control API would be "
            "open to the network)");
  EXPECT_EQ(flag_error({.listen = "127.0.0.1:9901"}),
            "--listen: the admin listener cannot share the address of listen (127.0.0.1:9901)");
}

TEST(RequireUpstream, ServeNeedsOne) {
  Config c = default_config();
  try {
    require_upstream(c);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "upstream: not set: name the protected service with --upstream URL (or, for the control "
                 "API alone, give a --config without upstream and routes)");
  }
  apply_overrides(c, {.upstream = "http://127.0.0.1:9000"});
  EXPECT_NO_THROW(require_upstream(c));
}

// A file without upstream and routes serves the control API alone (docs/control-api.md);
// one with routes and no upstream is still refused, saying why.
TEST(RequireUpstream, AFileWithoutRoutesIsControlOnlyAndRoutesNeedAnUpstream) {
  Config control = load_config_text("store: \"memory:\"\n", "idem.yaml");
  EXPECT_TRUE(control.control_only());
  EXPECT_NO_THROW(require_upstream(control));
  Config routed =
      load_config_text("routes:\n  - name: a\n    match: {method: POST, path: /a}\n", "idem.yaml");
  EXPECT_FALSE(routed.control_only());
  try {
    require_upstream(routed);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "idem.yaml: upstream: not set, and routes need one: name the protected service in the "
                 "config or with --upstream URL (a config without routes and upstream serves the control "
                 "API alone)");
  }
  apply_overrides(control, {.upstream = "http://127.0.0.1:9000"});
  EXPECT_FALSE(control.control_only());
}

// Config::advice: what a valid config most likely does not mean, "file:line: key: reason"
// (docs/configuration.md, "What idem check warns of").
std::vector<std::string> advice(std::string_view yaml) {
  std::vector<std::string> out;
  for (const ConfigError& a : load_config_text(yaml, "idem.yaml").advice) out.emplace_back(a.what());
  return out;
}

TEST(ConfigAdvice, ShadowedRoutesAreToldOnlyWhenSurelyShadowed) {
  EXPECT_EQ(
      advice("routes:\n"
             "  - {name: any, match: {method: [POST, PUT], path: \"/orders/{id}\"}}\n"
             "  - {name: one, match: {method: POST, path: /orders/42}}\n"
             "  - {name: same, match: {method: PUT, path: \"/orders/{x}\"}}\n"
             "  - {name: below, match: {method: POST, path: /orders/42/items}}\n"
             "  - {name: patch, match: {method: PATCH, path: /orders/42}}\n"
             "  - {name: both, match: {method: [POST, PATCH], path: /orders/7}}\n"
             "  - {name: all, match: {method: POST, path: /*}}\n"
             "  - {name: late, match: {method: POST, path: /payments}}\n"),
      (std::vector<std::string>{
          "idem.yaml:3: routes[1].match: route 'one' never matches: routes[0] ('any', path \"/orders/{id}\") "
          "comes first and takes every request it would (the first match wins); move it before, or remove it",
          "idem.yaml:4: routes[2].match: route 'same' never matches: routes[0] ('any', path "
          "\"/orders/{id}\") "
          "comes first and takes every request it would (the first match wins); move it before, or remove it",
          "idem.yaml:9: routes[7].match: route 'late' never matches: routes[6] ('all', path \"/*\") comes "
          "first and takes every request it would (the first match wins); move it before, or remove it"}));
  // The same path, another method; a literal first and the parameter after: no advice.
  EXPECT_EQ(advice("routes:\n"
                   "  - {name: a, match: {method: POST, path: /orders/42}}\n"
                   "  - {name: b, match: {method: POST, path: \"/orders/{id}\"}}\n"
                   "  - {name: c, match: {method: PATCH, path: \"/orders/{id}\"}}\n"),
            std::vector<std::string>{});
}

TEST(ConfigAdvice, RoutesOnSafeMethodsSayWhy) {
  EXPECT_EQ(
      advice("routes:\n  - name: r\n    match:\n      method: [POST, GET, head]\n      path: /r\n"),
      (std::vector<std::string>{
          "idem.yaml:4: routes[0].match.method: GET is a safe method, idempotent by HTTP semantics already "
          "(RFC 9110, 9.2.1): protecting it stores every read and replays it, stale, for the retention; "
          "protect the methods that change state (POST, PATCH)",
          "idem.yaml:4: routes[0].match.method: HEAD is a safe method, idempotent by HTTP semantics already "
          "(RFC 9110, 9.2.1): protecting it stores every read and replays it, stale, for the retention; "
          "protect the methods that change state (POST, PATCH)"}));
  EXPECT_EQ(advice("routes:\n  - {name: r, match: {method: [POST, PUT, PATCH, DELETE], path: /r}}\n"),
            std::vector<std::string>{});
  EXPECT_EQ(advice(""), std::vector<std::string>{});  // the default route: POST and PATCH
}

TEST(ConfigRules, AdminTokens) {
  ::setenv("IDEM_RULES_TOKEN_A", "a-secret", 1);
  EXPECT_ERROR("admin:\n  tokens: []\n",
               "idem.yaml:2: admin.tokens: an empty list of tokens; give some, or leave admin.tokens out");
  EXPECT_ERROR("admin:\n  tokens:\n    - {name: a, env: IDEM_RULES_TOKEN_A, roles: [root]}\n",
               "idem.yaml:3: admin.tokens[0].roles[0]: expected control, operator, got 'root'");
  EXPECT_ERROR("admin:\n  tokens:\n    - {name: a, env: IDEM_RULES_TOKEN_A, roles: []}\n",
               "idem.yaml:3: admin.tokens[0].roles: an empty list of roles allows nothing");
  EXPECT_ERROR("admin:\n  tokens:\n    - {name: a, env: IDEM_RULES_TOKEN_A}\n",
               "idem.yaml:3: admin.tokens[0].roles: required");
  EXPECT_ERROR("admin:\n  tokens:\n    - {name: a b, env: IDEM_RULES_TOKEN_A, roles: control}\n",
               "idem.yaml:3: admin.tokens[0].name: a token name is");
  EXPECT_ERROR(
      "admin:\n  tokens:\n    - {name: a, env: IDEM_RULES_TOKEN_UNSET_X, roles: control}\n",
      "idem.yaml:3: admin.tokens[0].env: the environment variable IDEM_RULES_TOKEN_UNSET_X is not set");
  EXPECT_ERROR(
      "admin:\n  tokens:\n    - {name: a, env: IDEM_RULES_TOKEN_A, roles: control}\n"
      "    - {name: a, env: IDEM_RULES_TOKEN_A, roles: operator}\n",
      "idem.yaml:4: admin.tokens[1].name: token name 'a' is already used");
  // Tokens allow a non-loopback admin address, as token_env does.
  Config c = load_config_text(
      "admin:\n  listen: 0.0.0.0:9901\n  tokens:\n    - {name: svc, env: IDEM_RULES_TOKEN_A, roles: "
      "[control]}\n"
      "    - {name: ops, env: IDEM_RULES_TOKEN_A, roles: [operator, control]}\n",
      "idem.yaml");
  ASSERT_EQ(c.admin.tokens.size(), 2u);
  EXPECT_EQ(c.admin.tokens[0].name, "svc");
  EXPECT_EQ(c.admin.tokens[0].value, "a-secret");
  EXPECT_EQ(c.admin.tokens[0].roles, kRoleControl);
  EXPECT_EQ(c.admin.tokens[1].roles, kRoleControl | kRoleOperator);
  ::unsetenv("IDEM_RULES_TOKEN_A");
}

// docs/configuration.md, "JSON-RPC routes".
TEST(ConfigRules, JsonRpcRoutes) {
  const std::string head = "routes:\n  - name: mcp\n    match: {method: POST, path: /mcp}\n";
  EXPECT_EQ(error(head + "    jsonrpc_methods: [tools/call]\n"),
            "idem.yaml:4: routes[0].jsonrpc_methods: jsonrpc_methods needs mode: jsonrpc");
  EXPECT_EQ(
      error(head + "    mode: jsonrpc\n    jsonrpc_methods: []\n"),
      "idem.yaml:5: routes[0].jsonrpc_methods: an empty list of JSON-RPC methods protects nothing: remove "
      "mode: jsonrpc");
  EXPECT_EQ(error(head + "    mode: jsonrpc\n    key: token\n"),
            "idem.yaml:5: routes[0].key: a JSON-RPC route takes its key from a header or the call");
  EXPECT_EQ(error(head + "    mode: jsonrpc\n    fingerprint: json\n"),
            "idem.yaml:5: routes[0].fingerprint: a JSON-RPC route fingerprints the call (method and params, "
            "without id and params._meta): remove fingerprint");
  EXPECT_EQ(error(head + "    mode: jsonrpc\n    jsonrpc_methods: tools/call\n"), "no error");
  EXPECT_EQ(error(head + "    mode: rpc\n").rfind("idem.yaml:4: routes[0].mode:", 0), 0u);
}

}  // namespace
}  // namespace idem::gateway
