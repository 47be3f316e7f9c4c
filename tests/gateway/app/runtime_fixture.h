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

#include "gateway/app/runtime.h"
#include "gateway/http/server.h"
#include "gateway/model/config/config.h"
#include "gateway/pipeline/gateway.h"
#include "idem/open.h"
#include "idem/store_wrapper.h"
#include "testutil/e2e_harness.h"

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
  // The next get that finds a record removes it before it answers: the record is read, and
  // gone by the caller's next call (a release or an expiry in between).
  std::atomic<bool> remove_after_get{false};
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
    if (remove_after_get.exchange(false)) {
      RecordId again = id;
      return StoreWrapper::do_get(std::move(id), [this, again = std::move(again), cb = std::move(cb)](
                                                     Result<std::optional<Record>> r) mutable {
        StoreWrapper::do_remove(std::move(again), [r = std::move(r), cb = std::move(cb)](
                                                      Result<bool>) mutable { cb(std::move(r)); });
      });
    }
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
    config_.listen = {"127.0.0.1", 0};
    config_.admin.listen = {"127.0.0.1", 0};
    limit(config_);
    // The gateway as `idem serve` puts it together (app/runtime.h), on port 0, two threads.
    RuntimeOptions options;
    options.threads = 2;
    runtime_ = std::make_unique<Runtime>(config_, store_, std::move(options));
    gateway_ = &runtime_->gateway();
    admin_ = &runtime_->admin();
    server_ = &runtime_->server();
    metrics_ = &runtime_->metrics();
    port_ = runtime_->client_endpoint().port();
    admin_port_ = runtime_->admin_endpoint().port();
    runtime_->start();
  }
  void TearDown() override {
    // Drains as SIGTERM does: every answered request leaves its session before the I/O
    // threads stop.
    runtime_.reset();
    upstream_.reset();
    e2e::remove_dir(dir_);
  }
  // The listeners' caps and timeouts (`limits`, `admin.limits`): a second for a request head
  // unless a fixture that tests them says otherwise.
  virtual void limit(Config& c) const {
    c.limits.header_timeout = c.admin.limits.header_timeout = std::chrono::seconds(1);
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
  std::unique_ptr<Runtime> runtime_;
  Gateway* gateway_ = nullptr;
  Admin* admin_ = nullptr;
  Server* server_ = nullptr;
  Metrics* metrics_ = nullptr;
  unsigned short port_ = 0;
  unsigned short admin_port_ = 0;
};

inline std::string type_of(const e2e::Response& r) {
  boost::system::error_code ec;
  auto v = boost::json::parse(r.body(), ec);
  return ec ? r.body() : std::string(v.at("type").as_string());
}

}  // namespace idem::gateway::testing
