// `upstreams` and a route's `upstream` (docs/configuration.md, "Upstreams"): what they read as,
// and every mistake with its file:line: key.
#include <chrono>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "gateway/model/config/config.h"
#include "testutil/temp_dir.h"
#include "testutil/test_certificates.h"

namespace idem::gateway {
namespace {

using namespace std::chrono_literals;

std::string error(std::string_view yaml) {
  try {
    (void)load_config_text(yaml, "idem.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

constexpr std::string_view kTwo = R"(upstream_idle_timeout: 2s
upstreams:
  orders:
    url: http://orders.internal:8080/api
    timeout: 5s
  billing:
    url: http://10.0.0.7
    idle_timeout: 0
defaults:
  upstream_timeout: 20s
routes:
  - name: orders
    match: {method: POST, path: /orders}
    upstream: orders
  - name: slow-orders
    match: {method: POST, path: /orders/bulk}
    upstream: orders
    upstream_timeout: 60s
  - name: invoices
    match: {method: POST, path: /invoices}
    upstream: billing
)";

TEST(ConfigUpstreams, NamedUpstreamsAndTheRoutesNamingThem) {
  const Config c = load_config_text(kTwo, "idem.yaml");
  ASSERT_EQ(c.upstreams.size(), 2u);
  EXPECT_EQ(c.upstreams[0].name, "orders");
  EXPECT_EQ(c.upstreams[0].url.host, "orders.internal");
  EXPECT_EQ(c.upstreams[0].url.port, 8080);
  EXPECT_EQ(c.upstreams[0].url.base_path, "/api");
  EXPECT_EQ(c.upstreams[0].timeout, Duration(5s));
  EXPECT_EQ(c.upstreams[0].idle, Duration(2s));  // upstream_idle_timeout by default
  EXPECT_EQ(c.upstreams[0].line, 3);
  EXPECT_EQ(c.upstreams[1].timeout, std::nullopt);
  EXPECT_EQ(c.upstreams[1].idle, Duration(0s));
  EXPECT_FALSE(c.upstream);
  ASSERT_EQ(c.routes.size(), 3u);
  EXPECT_EQ(c.routes[0].upstream, "orders");
  // The upstream's timeout, unless the route sets its own; the defaults' elsewhere.
  EXPECT_EQ(c.routes[0].policy.upstream_timeout, Duration(5s));
  EXPECT_EQ(c.routes[1].policy.upstream_timeout, Duration(60s));
  EXPECT_EQ(c.routes[2].policy.upstream_timeout, Duration(20s));
  EXPECT_TRUE(c.advice.empty());
  EXPECT_FALSE(c.control_only());
  EXPECT_NO_THROW(require_upstream(c));  // every route names its upstream
  EXPECT_EQ(c.named_upstream("billing"), &c.upstreams[1]);
  EXPECT_EQ(c.named_upstream("nope"), nullptr);
}

TEST(ConfigUpstreams, AnUnknownNameListsTheKnownOnes) {
  EXPECT_EQ(error("upstreams:\n  orders:\n    url: http://a\n  billing:\n    url: http://b\nroutes:\n"
                  "  - name: r\n    match: {method: POST, path: /r}\n    upstream: ordres\n"),
            "idem.yaml:9: routes[0].upstream: unknown upstream 'ordres' (known: orders, billing)");
  EXPECT_EQ(error("upstream: http://a\nroutes:\n  - name: r\n    match: {method: POST, path: /r}\n"
                  "    upstream: x\n"),
            "idem.yaml:5: routes[0].upstream: unknown upstream 'x' (no upstreams are defined)");
}

TEST(ConfigUpstreams, EachMistakeNamesItsLineAndKey) {
  EXPECT_EQ(error("upstreams:\n  orders:\n    url: ftp://a\n"),
            "idem.yaml:3: upstreams.orders.url: scheme 'ftp' is not supported: http:// or https://");
  EXPECT_EQ(error("upstreams:\n  orders:\n    timeout: 5s\n"), "idem.yaml:3: upstreams.orders.url: required");
  EXPECT_EQ(
      error("upstreams:\n  orders:\n    url: http://a\n    timout: 5s\n"),
      "idem.yaml:4: upstreams.orders.timout: unknown key (expected one of: url, timeout, idle_timeout, tls)");
  EXPECT_EQ(error("upstreams:\n  orders:\n    url: http://a\n    timeout: 0s\n"),
            "idem.yaml:4: upstreams.orders.timeout: must be greater than 0");
  EXPECT_EQ(error("upstreams:\n  orders:\n    url: http://a\n    idle_timeout: -1s\n"),
            "idem.yaml:4: upstreams.orders.idle_timeout: duration \"-1s\": must not be negative");
  EXPECT_EQ(error("upstreams:\n  \"a b\":\n    url: http://a\n"),
            "idem.yaml:3: upstreams.a b: an upstream's name is letters, digits, '-', '_' and '.'");
  EXPECT_EQ(
      error("upstreams:\n  orders: http://a\n"),
      "idem.yaml:2: upstreams.orders: expected an upstream: a mapping with url (and timeout, idle_timeout)");
  EXPECT_EQ(error("upstreams:\n  orders:\n    url: http://a\n  orders:\n    url: http://b\n"),
            "idem.yaml:4: upstreams.orders: repeated key (first set on line 2)");
  EXPECT_EQ(error("upstreams:\n  - orders\n"), "idem.yaml:2: upstreams: expected a mapping of keys");
}

TEST(ConfigUpstreams, AnUnusedUpstreamIsWarnedOf) {
  const Config c = load_config_text(
      "upstream: http://a\nupstreams:\n  spare:\n    url: http://b\nroutes:\n"
      "  - name: r\n    match: {method: POST, path: /r}\n",
      "idem.yaml");
  ASSERT_EQ(c.advice.size(), 1u);
  EXPECT_STREQ(
      c.advice[0].what(),
      "idem.yaml:3: upstreams.spare: no route names this upstream (upstream: spare), so no request goes "
      "to it: name it on a route, or remove it");
}

TEST(ConfigUpstreams, RoutesWithoutAnUpstreamNeedTheDefault) {
  const Config c = load_config_text(
      "upstreams:\n  orders:\n    url: http://a\nroutes:\n"
      "  - name: orders\n    match: {method: POST, path: /orders}\n    upstream: orders\n"
      "  - name: notes\n    match: {method: POST, path: /notes}\n",
      "idem.yaml");
  try {
    require_upstream(c);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "idem.yaml: routes[1].upstream: not set, and there is no default upstream: name one of "
                 "upstreams, or set upstream (or --upstream URL)");
  }
  Config with_default = c;
  apply_overrides(with_default, CliOverrides{.upstream = "http://127.0.0.1:9000"});
  EXPECT_NO_THROW(require_upstream(with_default));
}

TEST(ConfigUpstreams, TlsSettings) {
  ASSERT_TRUE(testutil::certificates().ok());
  const std::string ca = testutil::certificates().file("ca.crt");
  const Config c = load_config_text(
      "upstream: https://api.internal\nupstream_tls:\n  ca_file: " + ca +
          "\n"
          "upstreams:\n  pay:\n    url: https://10.0.0.9:8443\n    tls:\n      server_name: pay.internal\n"
          "routes:\n  - name: pay\n    match: {method: POST, path: /pay}\n    upstream: pay\n",
      "idem.yaml");
  ASSERT_TRUE(c.upstream);
  EXPECT_TRUE(c.upstream->tls);
  EXPECT_EQ(c.upstream->port, 443);
  EXPECT_EQ(c.upstream_tls.ca_file, ca);
  EXPECT_TRUE(c.upstreams[0].url.tls);
  EXPECT_EQ(c.upstreams[0].url.port, 8443);
  EXPECT_EQ(c.upstreams[0].tls.server_name, "pay.internal");
  EXPECT_FALSE(c.upstreams[0].tls.insecure_skip_verify);
  EXPECT_TRUE(c.advice.empty());

  EXPECT_EQ(error("upstream: http://a\nupstream_tls:\n  ca_file: /x\n"),
            "idem.yaml:3: upstream_tls: TLS settings for an http:// upstream: write its URL as https://, or "
            "remove them");
  EXPECT_EQ(
      error("upstreams:\n  a:\n    url: http://a\n    tls:\n      ca_file: /x\n"),
      "idem.yaml:5: upstreams.a.tls: TLS settings for an http:// upstream: write its URL as https://, or "
      "remove them");
  EXPECT_EQ(error("upstreams:\n  a:\n    url: https://a\n    tls:\n      verify: false\n"),
            "idem.yaml:5: upstreams.a.tls.verify: unknown key (expected one of: ca_file, server_name, "
            "insecure_skip_verify)");
  EXPECT_EQ(error("upstreams:\n  a:\n    url: https://a\n    tls:\n      server_name: a:443\n"),
            "idem.yaml:5: upstreams.a.tls.server_name: a host name, without port or path");

  // The CA file is read with the config: a missing file, or one without a certificate, is an
  // error at its key (idem check, the start, a reload) rather than a 502 for every request.
  EXPECT_EQ(error("upstream: https://a\nupstream_tls:\n  ca_file: /nonexistent/ca.pem\n"),
            "idem.yaml:3: upstream_tls.ca_file: cannot load the CA certificates /nonexistent/ca.pem: No such "
            "file or directory");
  testutil::TempDir dir;
  std::ofstream(dir.file("key.pem"))
      << "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEI\n-----END PRIVATE KEY-----\n";
  EXPECT_EQ(
      error("upstreams:\n  a:\n    url: https://a\n    tls:\n      ca_file: " + dir.file("key.pem") + "\n"),
      "idem.yaml:5: upstreams.a.tls.ca_file: cannot load the CA certificates " + dir.file("key.pem") +
          ": it holds no PEM certificate");
  EXPECT_EQ(error("upstream: https://a\nupstream_tls:\n  ca_file: \"\"\n"),
            "idem.yaml:3: upstream_tls.ca_file: must name a file");

  const Config insecure =
      load_config_text("upstream: https://a\nupstream_tls:\n  insecure_skip_verify: true\n", "idem.yaml");
  ASSERT_EQ(insecure.advice.size(), 1u);
  EXPECT_STREQ(
      insecure.advice[0].what(),
      "idem.yaml:3: upstream_tls.insecure_skip_verify: the upstream's certificate is not verified: anyone on "
      "the path can read and change the requests and answers; give its CA with ca_file instead");
}

}  // namespace
}  // namespace idem::gateway
