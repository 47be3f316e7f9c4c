// A response larger than the store holds (Store::max_result_bytes), through the gateway
// in-process on a real MariaDB (IDEM_TEST_MYSQL_URL; skipped without): the route's
// max_result allows it, the server's max_allowed_packet does not.
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "gateway/app/runtime_fixture.h"
#include "gateway/model/stored_result.h"
#include "idem/store_wrapper.h"
#include "testutil/backends.h"

namespace idem::gateway {
namespace {

using namespace idem::gateway::testing;

// Counts the commits that reach the store.
class CountingStore final : public StoreWrapper {
 public:
  explicit CountingStore(std::unique_ptr<Store> s) : StoreWrapper(std::move(s)) {}
  std::atomic<int> commits{0};

 protected:
  void do_commit(CommitArgs a, Callback<CommitOutcome> cb) override {
    ++commits;
    StoreWrapper::do_commit(std::move(a), std::move(cb));
  }
};

TEST(StoreLimits, AResponseOverTheStoresLimitIsAnsweredThenResultNotStoredNeverRetried) {
  std::unique_ptr<Store> mysql = testutil::mysql_backend().open(nullptr);
  if (!mysql) GTEST_SKIP() << "IDEM_TEST_MYSQL_URL not set (scripts/services start mariadb)";
  CountingStore store(std::move(mysql));
  const std::uint64_t limit = store.max_result_bytes();
  ASSERT_LT(limit + (1 << 20), 20u << 20) << "the route's max_result must allow more than the store holds";

  const std::string dir = e2e::temp_dir();
  e2e::Process upstream({IDEM_TEST_UPSTREAM}, dir + "/upstream.log", true);
  Config config = load_config_text("upstream: http://127.0.0.1:" + std::to_string(upstream.port()) + R"(
routes:
  - name: big
    match: { method: POST, path: /big }
    max_result: 20MiB
)",
                                   "test.yaml");
  config.listen = {"127.0.0.1", 0};
  config.admin.listen = {"127.0.0.1", 0};
  RuntimeOptions options;
  options.threads = 2;
  auto runtime = std::make_unique<Runtime>(config, store, std::move(options));
  Gateway& gateway = runtime->gateway();
  const unsigned short port = runtime->client_endpoint().port();
  runtime->start();

  const std::string size = std::to_string(limit + 1000);
  const auto post = [&] {
    return request(port, verb::post, "/big", {{"Idempotency-Key", "k1"}, {"X-Test-Body-Size", size}}, "{}");
  };
  auto first = post();
  EXPECT_EQ(first.result_int(), 201u);
  EXPECT_EQ(first.body().size(), limit + 1000);  // the first client gets the whole response
  // The marker was committed at once: nothing is left to settle in the background, and the
  // store saw one commit.
  EXPECT_FALSE(gateway.settling());
  EXPECT_EQ(store.commits.load(), 1);
  auto record = store.get({"", "big:k1"});
  ASSERT_TRUE(record.is_ok() && record->has_value()) << record.status().to_string();
  EXPECT_EQ((*record)->state, RecordState::done);
  auto stored = decode_stored_result((*record)->result);
  ASSERT_TRUE(stored.is_ok());
  EXPECT_EQ(stored->kind, StoredResult::Kind::not_stored);
  EXPECT_EQ(stored->response.status, 201u);

  auto again = post();
  EXPECT_EQ(again.result_int(), 409u);
  EXPECT_EQ(type_of(again), "urn:idem:problem:result-not-stored");
  EXPECT_EQ(request(upstream.port(), verb::get, "/_count?key=k1").body(), "1");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(store.commits.load(), 1);  // never retried

  runtime.reset();  // drains as SIGTERM does
  e2e::remove_dir(dir);
}

}  // namespace
}  // namespace idem::gateway
