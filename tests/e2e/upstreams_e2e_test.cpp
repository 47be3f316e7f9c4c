// Several services behind one gateway (docs/gateway.md, "Several services behind one
// gateway"): the `idem` process in front of test upstream processes, routes naming theirs,
// the rest going to the default; SIGHUP adding an upstream and changing one's URL.
#include <csignal>
#include <string>

#include <gtest/gtest.h>

#include "e2e/e2e_fixture.h"

namespace idem::e2e {
namespace {

std::string url(const Process& p, const std::string& base = "") {
  return "http://127.0.0.1:" + std::to_string(p.port()) + base;
}

// The executions of `key` at the test upstream `p`.
std::string executions(const Process& p, const std::string& key) {
  return request(p.port(), verb::get, "/_count?key=" + key).body();
}

// What `p` received (test_upstream's /_seen).
std::string seen(const Process& p) { return request(p.port(), verb::get, "/_seen?from=0").body(); }

Response post(unsigned short port, const std::string& target, const std::string& key) {
  return request(port, verb::post, target, {{"Idempotency-Key", key}}, "{}");
}

// A directory of the test's own, removed after it.
struct Dir {
  std::string path = temp_dir();
  ~Dir() { remove_dir(path); }
};

struct Gateway {
  Dir tmp;
  unsigned short port = free_port(), admin = free_port();
  std::string file = tmp.path + "/idem.yaml", log = tmp.path + "/idem.log";
  std::string head() const {
    return "listen: 127.0.0.1:" + std::to_string(port) +
           "\nstore: \"memory:\"\nadmin:\n  listen: 127.0.0.1:" + std::to_string(admin) + "\n";
  }
  std::size_t reloads() const {
    std::size_t n = 0;
    const std::string text = read_text(log);
    for (std::size_t at = 0; (at = text.find("idem: reload", at)) != std::string::npos; ++at) ++n;
    return n;
  }
};

TEST(NamedUpstreams, RoutesGoToTheUpstreamTheyNameAndEverythingElseToTheDefault) {
  Gateway g;
  Process fallback({IDEM_TEST_UPSTREAM}, g.tmp.path + "/d.log", true);
  Process orders({IDEM_TEST_UPSTREAM}, g.tmp.path + "/a.log", true);
  Process billing({IDEM_TEST_UPSTREAM}, g.tmp.path + "/b.log", true);
  write_file(g.file,
             g.head() + "upstream: " + url(fallback) + "\nupstreams:\n  orders:\n    url: " +
                 url(orders, "/api") + "\n  billing:\n    url: " + url(billing) +
                 "\n    timeout: 2s\nroutes:\n"
                 "  - name: orders\n    match: {method: POST, path: /orders}\n    upstream: orders\n"
                 "  - name: invoices\n    match: {method: POST, path: /invoices}\n    upstream: billing\n"
                 "  - name: notes\n    match: {method: POST, path: /notes}\n");
  Process idem({IDEM_BIN, "serve", "--config", g.file}, g.log);
  ASSERT_TRUE(wait_healthy(g.admin, 5000)) << read_text(g.log);

  EXPECT_EQ(post(g.port, "/orders", "o1").result_int(), 201u);
  EXPECT_EQ(header(post(g.port, "/orders", "o1"), "Idempotent-Replayed"), "true");
  EXPECT_EQ(post(g.port, "/invoices", "i1").result_int(), 201u);
  EXPECT_EQ(post(g.port, "/notes", "n1").result_int(), 201u);
  EXPECT_EQ(request(g.port, verb::get, "/health-of-the-default").result_int(), 200u);

  EXPECT_EQ(executions(orders, "o1"), "1");
  EXPECT_EQ(executions(billing, "i1"), "1");
  EXPECT_EQ(executions(fallback, "n1"), "1");
  for (const char* key : {"o1", "i1"}) EXPECT_EQ(executions(fallback, key), "0") << key;
  EXPECT_EQ(executions(orders, "i1"), "0");
  EXPECT_EQ(executions(billing, "o1"), "0");
  // The named upstream's base path is prefixed as the default's is.
  EXPECT_NE(seen(orders).find("\"target\":\"/api/orders\""), std::string::npos) << seen(orders);
  EXPECT_NE(seen(fallback).find("\"target\":\"/health-of-the-default\""), std::string::npos)
      << seen(fallback);
  EXPECT_EQ(seen(orders).find("health"), std::string::npos);
  EXPECT_NE(read_text(g.log).find("upstreams.orders " + url(orders, "/api")), std::string::npos)
      << read_text(g.log);
  idem.signal(SIGTERM);
  EXPECT_EQ(idem.wait(5000), 0);
}

TEST(NamedUpstreams, WithoutADefaultARequestOnNoRouteIsAnswered502) {
  Gateway g;
  Process orders({IDEM_TEST_UPSTREAM}, g.tmp.path + "/a.log", true);
  write_file(g.file, g.head() + "upstreams:\n  orders:\n    url: " + url(orders) +
                         "\nroutes:\n  - name: orders\n    match: {method: POST, path: /orders}\n"
                         "    upstream: orders\n");
  Process idem({IDEM_BIN, "serve", "--config", g.file}, g.log);
  ASSERT_TRUE(wait_healthy(g.admin, 5000)) << read_text(g.log);
  EXPECT_EQ(post(g.port, "/orders", "o1").result_int(), 201u);
  const Response other = request(g.port, verb::get, "/elsewhere");
  EXPECT_EQ(other.result_int(), 502u);
  EXPECT_EQ(problem_type(other), "urn:idem:problem:upstream-unavailable");
  EXPECT_EQ(header(other, "Content-Type"), "application/problem+json");
  EXPECT_EQ(seen(orders).find("elsewhere"), std::string::npos);
  idem.signal(SIGTERM);
  EXPECT_EQ(idem.wait(5000), 0);
}

TEST(NamedUpstreams, SighupAddsAnUpstreamAndMovesOneToANewUrl) {
  Gateway g;
  Process first({IDEM_TEST_UPSTREAM}, g.tmp.path + "/1.log", true);
  Process second({IDEM_TEST_UPSTREAM}, g.tmp.path + "/2.log", true);
  Process added({IDEM_TEST_UPSTREAM}, g.tmp.path + "/3.log", true);
  const std::string orders_route =
      "routes:\n  - name: orders\n    match: {method: POST, path: /orders}\n    upstream: orders\n";
  write_file(g.file, g.head() + "upstreams:\n  orders:\n    url: " + url(first) + "\n" + orders_route);
  Process idem({IDEM_BIN, "serve", "--config", g.file}, g.log);
  ASSERT_TRUE(wait_healthy(g.admin, 5000)) << read_text(g.log);
  EXPECT_EQ(post(g.port, "/orders", "before").result_int(), 201u);
  EXPECT_EQ(request(g.port, verb::post, "/payments", {}, "{}").result_int(), 502u);  // no route, no default

  write_file(g.file,
             g.head() + "upstreams:\n  orders:\n    url: " + url(second) +
                 "\n  payments:\n    url: " + url(added) + "\n" + orders_route +
                 "  - name: payments\n    match: {method: POST, path: /payments}\n    upstream: payments\n");
  idem.signal(SIGHUP);
  ASSERT_TRUE(testutil::eventually([&] { return g.reloads() == 1; })) << read_text(g.log);
  EXPECT_NE(read_text(g.log).find("idem: reloaded " + g.file + " (2 routes)\n"), std::string::npos)
      << read_text(g.log);
  EXPECT_EQ(post(g.port, "/orders", "after").result_int(), 201u);
  EXPECT_EQ(post(g.port, "/payments", "p1").result_int(), 201u);
  EXPECT_EQ(executions(first, "before"), "1");
  EXPECT_EQ(executions(first, "after"), "0");
  EXPECT_EQ(executions(second, "after"), "1");
  EXPECT_EQ(executions(added, "p1"), "1");
  // A key run before the reload is still replayed: the record is the route's, not the upstream's.
  EXPECT_EQ(header(post(g.port, "/orders", "before"), "Idempotent-Replayed"), "true");

  // A route naming an unknown upstream: the reload fails with the file, line and key.
  write_file(
      g.file,
      g.head() + "upstreams:\n  orders:\n    url: " + url(second) + "\n" +
          "routes:\n  - name: orders\n    match: {method: POST, path: /orders}\n    upstream: ordres\n");
  idem.signal(SIGHUP);
  ASSERT_TRUE(testutil::eventually([&] { return g.reloads() == 2; })) << read_text(g.log);
  EXPECT_NE(
      read_text(g.log).find(g.file + ":11: routes[0].upstream: unknown upstream 'ordres' (known: orders)"),
      std::string::npos)
      << read_text(g.log);
  EXPECT_EQ(post(g.port, "/payments", "p2").result_int(), 201u);
  EXPECT_EQ(executions(added, "p2"), "1");
  idem.signal(SIGTERM);
  EXPECT_EQ(idem.wait(5000), 0);
}

}  // namespace
}  // namespace idem::e2e
