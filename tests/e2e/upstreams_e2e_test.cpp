// Several services behind one gateway (docs/gateway.md, "Several services behind one
// gateway"): the `idem` process in front of test upstream processes, routes naming theirs,
// the rest going to the default; SIGHUP adding an upstream and changing one's URL; an
// https:// upstream (docs/gateway.md, "TLS to upstreams"), a TLS server of the test's own
// with certificates the test makes.
#include <sys/socket.h>

#include <atomic>
#include <csignal>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/ssl.hpp>
#include <boost/beast/http.hpp>

#include "e2e/e2e_fixture.h"
#include "testutil/test_certificates.h"

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
  // idem_upstream_seconds has a series for each upstream (docs/observability.md): the orders
  // exchange (the replay made none), the invoice, and the default's note and GET.
  const std::string metrics = request(g.admin, verb::get, "/metrics").body();
  for (const char* count : {"idem_upstream_seconds_count{upstream=\"orders\"} 1\n",
                            "idem_upstream_seconds_count{upstream=\"billing\"} 1\n",
                            "idem_upstream_seconds_count{upstream=\"\"} 2\n"})
    EXPECT_NE(metrics.find(count), std::string::npos) << count << metrics;
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

// A request in flight when a reload moves its upstream finishes on the old one; the next
// goes to the new one.
TEST(NamedUpstreams, ARequestInFlightFinishesOnTheUpstreamItStartedOn) {
  Gateway g;
  Process old_one({IDEM_TEST_UPSTREAM}, g.tmp.path + "/1.log", true);
  Process new_one({IDEM_TEST_UPSTREAM}, g.tmp.path + "/2.log", true);
  const std::string route =
      "routes:\n  - name: orders\n    match: {method: POST, path: /orders}\n    upstream: orders\n";
  write_file(g.file, g.head() + "upstreams:\n  orders:\n    url: " + url(old_one) + "\n" + route);
  Process idem({IDEM_BIN, "serve", "--config", g.file}, g.log);
  ASSERT_TRUE(wait_healthy(g.admin, 5000)) << read_text(g.log);
  auto slow = std::async(std::launch::async, [&] {
    return request(g.port, verb::post, "/orders", {{"Idempotency-Key", "slow"}, {"X-Test-Delay-Ms", "1000"}},
                   "{}");
  });
  // Executed (and answering in 1 s) at the old upstream before the reload.
  ASSERT_TRUE(testutil::eventually([&] { return executions(old_one, "slow") == "1"; }));
  write_file(g.file, g.head() + "upstreams:\n  orders:\n    url: " + url(new_one) + "\n" + route);
  idem.signal(SIGHUP);
  ASSERT_TRUE(testutil::eventually([&] { return g.reloads() == 1; })) << read_text(g.log);
  EXPECT_EQ(post(g.port, "/orders", "next").result_int(), 201u);
  EXPECT_EQ(executions(new_one, "next"), "1");
  const Response r = slow.get();
  EXPECT_EQ(r.result_int(), 201u) << r.body();
  EXPECT_EQ(executions(old_one, "slow"), "1");
  EXPECT_EQ(executions(new_one, "slow"), "0");
  EXPECT_EQ(header(post(g.port, "/orders", "slow"), "Idempotent-Replayed"), "true");
}

// An HTTPS upstream: TLS 1.2+ with testutil's server certificate (localhost, 127.0.0.1),
// HTTP/1.1 keep-alive, every request answered 201 with "{}". Counts the connections whose
// handshake succeeded and the requests received.
class TlsUpstream {
 public:
  TlsUpstream() {
    const auto& certs = testutil::certificates();
    context_.use_certificate_chain_file(certs.file("server.crt"));
    context_.use_private_key_file(certs.file("server.key"), boost::asio::ssl::context::pem);
    acceptor_.open(tcp::v4());
    acceptor_.bind({boost::asio::ip::make_address("127.0.0.1"), 0});
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    accepting_ = std::thread([this] { accept(); });
  }
  ~TlsUpstream() {
    stopping_ = true;
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);  // accept() returns
    accepting_.join();
    {
      std::lock_guard lock(mu_);
      for (int fd : open_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : connections_) t.join();
  }
  unsigned short port() const { return port_; }
  int handshakes() const { return handshakes_.load(); }
  int requests() const { return requests_.load(); }

 private:
  using tcp = boost::asio::ip::tcp;
  void accept() {
    while (!stopping_) {
      tcp::socket socket(ioc_);
      boost::system::error_code ec;
      acceptor_.accept(socket, ec);
      if (ec || stopping_) return;
      std::lock_guard lock(mu_);
      open_.push_back(socket.native_handle());
      connections_.emplace_back([this, s = std::move(socket)]() mutable { serve(std::move(s)); });
    }
  }
  void serve(tcp::socket socket) {
    const int fd = socket.native_handle();
    boost::asio::ssl::stream<tcp::socket> stream(std::move(socket), context_);
    // Off the list before the stream closes the descriptor (destroyed after this guard), so
    // the destructor never shuts down a descriptor reused by then.
    const std::shared_ptr<void> unlisted(nullptr, [this, fd](void*) {
      std::lock_guard lock(mu_);
      std::erase(open_, fd);
    });
    boost::system::error_code ec;
    stream.handshake(boost::asio::ssl::stream_base::server, ec);
    if (ec) return;
    ++handshakes_;
    boost::beast::flat_buffer buffer;
    for (;;) {
      http::request<http::string_body> req;
      http::read(stream, buffer, req, ec);
      if (ec) return;
      ++requests_;
      http::response<http::string_body> res{http::status::created, 11};
      res.set(http::field::content_type, "application/json");
      res.body() = "{}";
      res.keep_alive(req.keep_alive());
      res.prepare_payload();
      http::write(stream, res, ec);
      if (ec || !req.keep_alive()) return;
    }
  }

  boost::asio::io_context ioc_;
  boost::asio::ssl::context context_{boost::asio::ssl::context::tls_server};
  tcp::acceptor acceptor_{ioc_};
  unsigned short port_ = 0;
  std::thread accepting_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> handshakes_{0}, requests_{0};
  std::mutex mu_;
  std::vector<int> open_;                 // guarded by mu_
  std::vector<std::thread> connections_;  // guarded by mu_ while accepting
};

// A gateway whose route /pay goes to the TLS upstream, with `tls` its settings.
std::string tls_config(const Gateway& g, const TlsUpstream& up, const std::string& host,
                       const std::string& tls) {
  return g.head() + "upstreams:\n  pay:\n    url: https://" + host + ":" + std::to_string(up.port()) +
         "\n    tls:\n" + tls +
         "routes:\n  - name: pay\n    match: {method: POST, path: /pay}\n    upstream: pay\n";
}

TEST(TlsUpstreams, VerifiedWithTheCaFileAndReusedOverKeepAlive) {
  ASSERT_TRUE(testutil::certificates().ok());
  Gateway g;
  TlsUpstream up;
  write_file(g.file, tls_config(g, up, "localhost",
                                "      ca_file: " + testutil::certificates().file("ca.crt") + "\n"));
  Process idem({IDEM_BIN, "serve", "--config", g.file}, g.log);
  ASSERT_TRUE(wait_healthy(g.admin, 5000)) << read_text(g.log);
  KeepAlive conn(g.port);  // one client connection: one I/O thread, one pool
  for (const char* key : {"k1", "k2", "k3"}) EXPECT_EQ(conn.post("/pay", key).result_int(), 201u) << key;
  EXPECT_EQ(header(conn.post("/pay", "k1"), "Idempotent-Replayed"), "true");
  EXPECT_EQ(up.requests(), 3);
  EXPECT_EQ(up.handshakes(), 1) << "the TLS connection is pooled and reused";
}

TEST(TlsUpstreams, AnIpAddressIsCheckedAgainstTheCertificatesAddresses) {
  ASSERT_TRUE(testutil::certificates().ok());
  Gateway g;
  TlsUpstream up;
  write_file(g.file, g.head() + "upstream: https://127.0.0.1:" + std::to_string(up.port()) +
                         "\nupstream_tls:\n  ca_file: " + testutil::certificates().file("ca.crt") + "\n");
  Process idem({IDEM_BIN, "serve", "--config", g.file}, g.log);
  ASSERT_TRUE(wait_healthy(g.admin, 5000)) << read_text(g.log);
  EXPECT_EQ(request(g.port, verb::get, "/anything").result_int(), 201u);
  EXPECT_EQ(up.requests(), 1);
}

// A certificate the gateway cannot trust, or one for another name: 502 with nothing sent,
// and the claim released (the repeat runs again, not answered uncertain or in progress).
void expect_refused(const std::string& tls, const std::string& why) {
  ASSERT_TRUE(testutil::certificates().ok());
  Gateway g;
  TlsUpstream up;
  write_file(g.file, tls_config(g, up, "localhost", tls));
  Process idem({IDEM_BIN, "serve", "--config", g.file}, g.log);
  ASSERT_TRUE(wait_healthy(g.admin, 5000)) << read_text(g.log);
  for (int i = 0; i < 2; ++i) {
    const Response r = post(g.port, "/pay", "k1");
    EXPECT_EQ(r.result_int(), 502u) << r.body();
    EXPECT_EQ(problem_type(r), "urn:idem:problem:upstream-unavailable");
    EXPECT_NE(r.body().find(why), std::string::npos) << r.body();
  }
  EXPECT_EQ(up.requests(), 0);
  EXPECT_EQ(up.handshakes(), 0);
}

TEST(TlsUpstreams, AnUntrustedCertificateIsRefusedWithNothingForwarded) {
  expect_refused("      ca_file: " + testutil::certificates().file("other.crt") + "\n",
                 "is not trusted: unable to get local issuer certificate");
}

TEST(TlsUpstreams, ACertificateForAnotherNameIsRefused) {
  expect_refused(
      "      ca_file: " + testutil::certificates().file("ca.crt") + "\n      server_name: orders.example\n",
      "the certificate of orders.example is not trusted: hostname mismatch");
}

TEST(TlsUpstreams, InsecureSkipVerifyTrustsAnyCertificateAndIsWarnedOf) {
  ASSERT_TRUE(testutil::certificates().ok());
  Gateway g;
  TlsUpstream up;
  write_file(g.file, tls_config(g, up, "localhost", "      insecure_skip_verify: true\n"));
  std::string out;
  EXPECT_EQ(run({IDEM_BIN, "check", g.file}, &out), 0);
  EXPECT_NE(out.find("idem: warning: " + g.file +
                     ":9: upstreams.pay.tls.insecure_skip_verify: the upstream's "
                     "certificate is not verified"),
            std::string::npos)
      << out;
  Process idem({IDEM_BIN, "serve", "--config", g.file}, g.log);
  ASSERT_TRUE(wait_healthy(g.admin, 5000)) << read_text(g.log);
  EXPECT_EQ(post(g.port, "/pay", "k1").result_int(), 201u);
  EXPECT_EQ(up.requests(), 1);
}

}  // namespace
}  // namespace idem::e2e
