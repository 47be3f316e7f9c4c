// The in-process gateway runtime for tests (gateway_runtime_test, coalescing_test): the
// gateway, admin and server on a store decorator that fails on demand (LevelDB's
// SpecialEnv), in front of the real test upstream process.
#pragma once

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "gateway/admin/admin.h"
#include "gateway/e2e_harness.h"
#include "gateway/http/server.h"
#include "gateway/model/config/config.h"
#include "gateway/pipeline/gateway.h"
#include "idem/open.h"
#include "idem/store_wrapper.h"

namespace idem::gateway::testing {

using e2e::request;
using http::verb;

inline constexpr const char* kStoreAddress = "10.9.8.7:6390";

// A memory store whose flagged operations answer `unavailable` instead.
class FaultyStore final : public StoreWrapper {
 public:
  FaultyStore() : StoreWrapper(std::move(open_store("memory:")).value()) {}
  std::atomic<bool> fail_begin{false};
  std::atomic<bool> fail_commit{false};
  std::atomic<bool> fail_consume{false};
  std::atomic<bool> fail_records{false};  // get and remove
  std::atomic<int> restore_delay_ms{0};   // restore_token answers this late
  // begin and commit are applied, and then their answer is lost (outcome unknown).
  std::atomic<bool> lose_replies{false};
  std::atomic<int> begins{0};  // begin calls that reached the store
  ~FaultyStore() override {
    for (auto& t : late_) t.join();
  }

 protected:
  // As a real store words it: its address and the driver's error, which clients never see.
  static Status down() {
    return unavailable(std::string("redis ") + kStoreAddress + ": connect: Connection refused");
  }
  static Status lost() {
    return Status(StatusCode::deadline_exceeded, std::string("redis ") + kStoreAddress + ": read: timed out");
  }
  // Runs the call on the real store and answers `lost()` instead of its outcome.
  template <class T>
  static Callback<T> losing(Callback<T> cb) {
    return [cb = std::move(cb)](Result<T>) mutable { cb(lost()); };
  }
  void do_begin(BeginArgs a, Callback<BeginOutcome> cb) override {
    ++begins;
    if (fail_begin) return cb(down());
    if (lose_replies) return StoreWrapper::do_begin(std::move(a), losing(std::move(cb)));
    StoreWrapper::do_begin(std::move(a), std::move(cb));
  }
  void do_commit(CommitArgs a, Callback<CommitOutcome> cb) override {
    if (fail_commit) return cb(down());
    if (lose_replies) return StoreWrapper::do_commit(std::move(a), losing(std::move(cb)));
    StoreWrapper::do_commit(std::move(a), std::move(cb));
  }
  void do_consume_token(TokenArgs a, Callback<ConsumeOutcome> cb) override {
    if (fail_consume) return cb(down());
    StoreWrapper::do_consume_token(std::move(a), std::move(cb));
  }
  void do_restore_token(RestoreTokenArgs a, Callback<RestoreOutcome> cb) override {
    const int delay = restore_delay_ms;
    if (delay == 0) return StoreWrapper::do_restore_token(std::move(a), std::move(cb));
    std::lock_guard lock(late_mutex_);
    late_.emplace_back([this, delay, a = std::move(a), cb = std::move(cb)]() mutable {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay));
      StoreWrapper::do_restore_token(std::move(a), std::move(cb));
    });
  }
  void do_get(RecordId id, Callback<std::optional<Record>> cb) override {
    if (fail_records) return cb(down());
    StoreWrapper::do_get(std::move(id), std::move(cb));
  }
  void do_remove(RecordId id, Callback<bool> cb) override {
    if (fail_records) return cb(down());
    StoreWrapper::do_remove(std::move(id), std::move(cb));
  }
  void do_ping(Callback<Done> cb) override {
    if (fail_begin) return cb(down());
    StoreWrapper::do_ping(std::move(cb));
  }

 private:
  std::mutex late_mutex_;
  std::vector<std::thread> late_;
};

class GatewayRuntime : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = e2e::temp_dir();
    upstream_ = std::make_unique<e2e::Process>(std::vector<std::string>{IDEM_TEST_UPSTREAM},
                                               dir_ + "/upstream.log", true);
    config_ = load_config_text("upstream: http://127.0.0.1:" + std::to_string(upstream_->port()) + R"(
store: "memory:"
routes:
  - name: orders
    match: { method: POST, path: /orders }
  - name: reject
    match: { method: POST, path: /reject }
  - name: short
    match: { method: POST, path: /short }
    retention: 2s
  - name: pass
    match: { method: POST, path: /pass }
    on_store_error: pass
  - name: token-pass
    match: { method: POST, path: /token-pass }
    key: token
    on_store_error: pass
  - name: token-reject
    match: { method: POST, path: /token-reject }
    key: token
)",
                               "test.yaml");
    upstream_client_ = std::make_unique<UpstreamClient>(*config_.upstream);
    gateway_ = std::make_unique<Gateway>(config_, store_, *upstream_client_, metrics_);
    admin_ = std::make_unique<Admin>(config_, store_, metrics_, &gateway_->replay_cache());
    server_ = std::make_unique<Server>(pool_, *gateway_, *admin_, metrics_.gauges(), limits());
    port_ = server_->listen_client({"127.0.0.1", 0}).port();
    admin_port_ = server_->listen_admin({"127.0.0.1", 0}).port();
    runner_ = std::thread([this] { pool_.run(); });
  }
  void TearDown() override {
    // Let every answered request leave its session before the loop stops: a session
    // frame destroyed with the io_context later must not hold a request open on a
    // Server that is already gone.
    server_->shutdown();
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!server_->drained() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    // The admin listener's sessions too (they outlive shutdown()).
    server_->close();
    while (!server_->closed() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    pool_.stop();
    runner_.join();
    upstream_.reset();
    e2e::remove_dir(dir_);
  }
  virtual ServerLimits limits() const {
    ServerLimits l;
    l.header_timeout = std::chrono::seconds(1);
    return l;
  }
  // A one-time token from the gateway.
  std::string issue_token() {
    auto issued = request(port_, verb::post, "/_idem/tokens");
    EXPECT_EQ(issued.result_int(), 201u) << issued.body();
    return std::string(boost::json::parse(issued.body()).at("token").as_string());
  }
  // How many times the upstream ran requests with this key.
  std::string upstream_count(const std::string& key) {
    return request(upstream_->port(), verb::get, "/_count?key=" + key).body();
  }
  // Asks the upstream until it has run `key` once (or 5 s pass); true when it has.
  bool wait_at_upstream(const std::string& key) {
    for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
         std::chrono::steady_clock::now() < until;)
      if (upstream_count(key) == "1") return true;
    return false;
  }
  e2e::Response post(const std::string& target, const std::string& key) {
    return request(port_, verb::post, target, {{"Idempotency-Key", key}}, "{}");
  }

  std::string dir_;
  std::unique_ptr<e2e::Process> upstream_;
  Config config_;
  FaultyStore store_;
  Metrics metrics_;
  IoPool pool_{2};
  std::unique_ptr<UpstreamClient> upstream_client_;
  std::unique_ptr<Gateway> gateway_;
  std::unique_ptr<Admin> admin_;
  std::unique_ptr<Server> server_;
  unsigned short port_ = 0;
  unsigned short admin_port_ = 0;
  std::thread runner_;
};

inline std::string type_of(const e2e::Response& r) {
  boost::system::error_code ec;
  auto v = boost::json::parse(r.body(), ec);
  return ec ? r.body() : std::string(v.at("type").as_string());
}

}  // namespace idem::gateway::testing
