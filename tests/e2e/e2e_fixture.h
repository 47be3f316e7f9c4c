// The shared fixture of the gateway's end-to-end tests: one test upstream and one `idem
// serve` (memory store) per test program, with a route for every behaviour under test.
#pragma once

#include <unistd.h>

#include <atomic>
#include <string>

#include <gtest/gtest.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/json.hpp>

#include "testutil/e2e_harness.h"
#include "testutil/eventually.h"

namespace idem::e2e {

using http::verb;
namespace json = boost::json;

inline std::string problem_type(const Response& r) {
  boost::system::error_code ec;
  auto v = json::parse(r.body(), ec);
  if (ec || !v.is_object() || !v.as_object().contains("type")) return "(no problem: " + r.body() + ")";
  return std::string(v.as_object().at("type").as_string());
}

inline std::string header(const Response& r, const char* name) {
  auto it = r.find(name);
  return it == r.end() ? std::string() : std::string(it->value());
}

inline json::object body_json(const Response& r) {
  boost::system::error_code ec;
  auto v = json::parse(r.body(), ec);
  return ec || !v.is_object() ? json::object{} : v.as_object();
}

// One keep-alive connection to the gateway (requests on it stay on one of its I/O threads, and
// must survive a reload): POSTs with a key.
class KeepAlive {
 public:
  explicit KeepAlive(unsigned short port) : socket_(ioc_) {
    socket_.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  }
  Response post(const std::string& target, const std::string& key) {
    http::request<http::string_body> req{verb::post, target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.set("Idempotency-Key", key);
    req.body() = "{}";
    req.prepare_payload();
    boost::system::error_code ec;
    http::write(socket_, req, ec);
    Response res;
    if (!ec) http::read(socket_, buffer_, res, ec);
    if (ec) res.result(0);
    return res;
  }

 private:
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

// The top of a gateway's config: its listeners, its upstream and its store; the caller
// appends defaults and routes.
inline std::string config_head(unsigned short listen, unsigned short upstream, unsigned short admin,
                               const std::string& store) {
  return "listen: 127.0.0.1:" + std::to_string(listen) +
         "\nupstream: http://127.0.0.1:" + std::to_string(upstream) + "\nstore: \"" + store +
         "\"\nadmin:\n  listen: 127.0.0.1:" + std::to_string(admin) + "\n";
}

inline std::string config_text(unsigned short listen, unsigned short upstream, unsigned short admin,
                               const std::string& store = "memory:") {
  return config_head(listen, upstream, admin, store) + R"(defaults:
  lease: 5s
  wait: 5s
  upstream_timeout: 3s
routes:
  - name: orders
    match: { method: POST, path: /orders }
  - name: nowait
    match: { method: POST, path: /nowait }
    wait: 0
  - name: slow
    match: { method: POST, path: /slow }
    upstream_timeout: 500ms
  - name: retry
    match: { method: POST, path: /retry }
    upstream_timeout: 500ms
    on_uncertain: retry
    lease: 1s
    wait: 0
  - name: once
    match: { method: POST, path: /once }
    on_duplicate: reject
  - name: small
    match: { method: POST, path: /small }
    max_body: 100B
    max_result: 64B
  - name: cached
    match: { method: POST, path: /cached }
    cache_5xx: true
  - name: user
    match: { method: POST, path: /user }
    subject: header:X-User-Id
  - name: pay
    match: { method: POST, path: /pay }
    key: "pay:{json.id}"
  - name: form
    match: { method: POST, path: "/forms/*" }
    key: token
  - name: stock
    match: { method: POST, path: "/skus/{sku}/deduct" }
    key: "stock:{path.sku}"
    mode: lock
  - name: optional
    match: { method: POST, path: /optional }
    required: false
  - name: hashed
    match: { method: POST, path: /hashed }
    subject: header-hash:Authorization
  - name: form-once
    match: { method: POST, path: "/once-forms/*" }
    key: token
    on_duplicate: reject
  - name: renewed
    match: { method: POST, path: /renewed }
    lease: 900ms
    wait: 0
  - name: renewed-lock
    match: { method: POST, path: "/renewed-skus/{sku}/deduct" }
    key: "stock:{path.sku}"
    mode: lock
    lease: 900ms
)";
}

class GatewayE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    start([](unsigned short l, unsigned short u, unsigned short a) { return config_text(l, u, a); });
  }
  // Starts the test upstream and `idem serve` with the config make_config(listen port,
  // upstream port, admin port) writes; a suite of other routes calls it from its own
  // SetUpTestSuite.
  static void start(std::string (*make_config)(unsigned short, unsigned short, unsigned short)) {
    dir_ = new std::string(temp_dir());
    upstream_ = new Process({IDEM_TEST_UPSTREAM}, *dir_ + "/upstream.log", true);
    port_ = free_port();
    admin_ = free_port();
    write_file(*dir_ + "/idem.yaml", make_config(port_, upstream_->port(), admin_));
    idem_ = new Process({IDEM_BIN, "serve", "--config", *dir_ + "/idem.yaml"}, *dir_ + "/idem.log");
    ASSERT_TRUE(wait_healthy(admin_, 5000)) << "idem did not start; see " << *dir_ << "/idem.log";
  }
  static void TearDownTestSuite() {
    delete idem_;
    delete upstream_;
    remove_dir(*dir_);
    delete dir_;
  }

  static Response post(const std::string& target, const std::string& key, const std::string& body = "{}",
                       Headers extra = {}) {
    if (!key.empty()) extra.emplace_back("Idempotency-Key", key);
    extra.emplace_back("Content-Type", "application/json");
    return request(port_, verb::post, target, extra, body);
  }
  static int executions(const std::string& key) {
    return std::stoi(request(upstream_->port(), verb::get, "/_count?key=" + key).body());
  }
  // Waits until the upstream has started executing `key` (the test upstream counts a
  // request when it begins, before any X-Test-Delay-Ms): the event a race is ordered by.
  static bool reached_upstream(const std::string& key, int times = 1) {
    return testutil::eventually([&] { return executions(key) >= times; });
  }
  // Waits until the record the route `space` keeps for `key` is done.
  static bool record_done(const std::string& space, const std::string& key) {
    return testutil::eventually([&] {
      return request(admin_, verb::get, "/v1/records/_/" + key + "?key_space=" + space)
                 .body()
                 .find("\"state\":\"done\"") != std::string::npos;
    });
  }
  static std::string unique(const char* name) {
    static std::atomic<int> n{0};
    return std::string(name) + "-" + std::to_string(::getpid()) + "-" + std::to_string(++n);
  }

  static inline std::string* dir_ = nullptr;
  static inline Process* upstream_ = nullptr;
  static inline Process* idem_ = nullptr;
  static inline unsigned short port_ = 0;
  static inline unsigned short admin_ = 0;
};

}  // namespace idem::e2e
