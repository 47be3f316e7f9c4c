// The shop's AMQP layer (examples/shop/amqp.h) and its points consumer (shop-consumer)
// against a real RabbitMQ: IDEM_TEST_AMQP_URL (scripts/services start rabbitmq). Without
// it the broker tests are skipped; the URL parser tests always run.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "amqp.h"
#include "db.h"

extern char** environ;

namespace {

using namespace std::chrono_literals;
using shop::AmqpError;
using shop::AmqpUrl;

std::optional<AmqpUrl> test_broker() {
  const char* url = std::getenv("IDEM_TEST_AMQP_URL");
  if (url == nullptr || *url == '\0') return std::nullopt;
  return AmqpUrl::parse(url);
}

#define REQUIRE_BROKER(url)                         \
  const std::optional<AmqpUrl> url = test_broker(); \
  if (!url) GTEST_SKIP() << "IDEM_TEST_AMQP_URL is not set (scripts/services)"

// Queues are durable and outlive the test: a fresh name per test and run keeps tests
// (and parallel runs of the suite) from seeing each other's messages.
std::string unique_queue(const std::string& what) {
  static std::mt19937_64 rng(std::random_device{}());
  return "idem-test." + what + "." + std::to_string(::getpid()) + "." + std::to_string(rng() % 1'000'000'000);
}

std::optional<shop::Delivery> next_within(shop::Consumer& c, std::chrono::milliseconds total) {
  const auto deadline = std::chrono::steady_clock::now() + total;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto d = c.next(100ms)) return d;
  }
  return std::nullopt;
}

// ---- AmqpUrl ----------------------------------------------------------------------------

TEST(AmqpUrlTest, ParsesEveryPart) {
  const AmqpUrl u = AmqpUrl::parse("amqp://alice:s%40cret@broker.example:5673/shop%2fprod");
  EXPECT_EQ(u.user, "alice");
  EXPECT_EQ(u.password, "s@cret");
  EXPECT_EQ(u.host, "broker.example");
  EXPECT_EQ(u.port, 5673);
  EXPECT_EQ(u.vhost, "shop/prod");
}

TEST(AmqpUrlTest, DefaultsAndTheDefaultVhost) {
  for (const char* text :
       {"amqp://localhost", "amqp://localhost/", "amqp://localhost/%2f", "amqp://localhost/%2F"}) {
    const AmqpUrl u = AmqpUrl::parse(text);
    EXPECT_EQ(u.host, "localhost") << text;
    EXPECT_EQ(u.port, 5672) << text;
    EXPECT_EQ(u.user, "guest") << text;
    EXPECT_EQ(u.password, "guest") << text;
    EXPECT_EQ(u.vhost, "/") << text;
  }
  const AmqpUrl v6 = AmqpUrl::parse("amqp://[::1]:25673/");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, 25673);
  EXPECT_EQ(AmqpUrl::parse("amqp://guest:guest@127.0.0.1:25673/?heartbeat=10").port, 25673);
}

TEST(AmqpUrlTest, MalformedUrlsThrowAmqpError) {
  for (const char* text : {"", "amqp:/", "amqp://", "http://h/", "amqps://h/", "amqp://h:", "amqp://h:0",
                           "amqp://h:65536", "amqp://h:12x", "amqp://u:p@", "amqp://h/%", "amqp://h/%zz",
                           "amqp://h/%4", "amqp://[::1", "amqp://[::1]x", "amqp://:5672"}) {
    EXPECT_THROW(AmqpUrl::parse(text), AmqpError) << text;
  }
}

// ---- Publisher and Consumer -------------------------------------------------------------

TEST(AmqpTest, PublishedWithConfirmThenConsumed) {
  REQUIRE_BROKER(url);
  const std::string queue = unique_queue("confirm");
  shop::Publisher pub(*url, queue);
  pub.publish("m-1", R"({"n":1})");
  pub.publish("m-2", std::string("binary\0body", 11));

  shop::Consumer con(*url, queue);
  auto first = next_within(con, 5s);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->message_id, "m-1");
  EXPECT_EQ(first->body, R"({"n":1})");
  EXPECT_FALSE(first->redelivered);
  auto second = next_within(con, 5s);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->message_id, "m-2");
  EXPECT_EQ(second->body, std::string("binary\0body", 11));
  con.ack(first->delivery_tag);
  con.ack(second->delivery_tag);
  EXPECT_FALSE(con.next(200ms)) << "the queue should be empty";
}

TEST(AmqpTest, NackWithRequeueRedelivers) {
  REQUIRE_BROKER(url);
  const std::string queue = unique_queue("nack");
  shop::Publisher(*url, queue).publish("again", "payload");
  shop::Consumer con(*url, queue);
  auto d = next_within(con, 5s);
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->redelivered);
  con.nack(d->delivery_tag, /*requeue=*/true);

  auto again = next_within(con, 5s);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->message_id, "again");
  EXPECT_EQ(again->body, "payload");
  EXPECT_TRUE(again->redelivered);
  con.nack(again->delivery_tag, /*requeue=*/false);  // dropped
  EXPECT_FALSE(con.next(300ms));
}

TEST(AmqpTest, UnackedMessagesGoToTheNextConsumer) {
  REQUIRE_BROKER(url);
  const std::string queue = unique_queue("unacked");
  {
    shop::Publisher pub(*url, queue);
    for (int i = 0; i < 3; ++i) pub.publish("u-" + std::to_string(i), "body");
  }
  {
    shop::Consumer gone(*url, queue);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(next_within(gone, 5s));
    // Disconnects without acking anything.
  }
  shop::Consumer next(*url, queue);
  std::set<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto d = next_within(next, 5s);
    ASSERT_TRUE(d);
    EXPECT_TRUE(d->redelivered);
    ids.insert(d->message_id);
    next.ack(d->delivery_tag);
  }
  EXPECT_EQ(ids, (std::set<std::string>{"u-0", "u-1", "u-2"}));
}

TEST(AmqpTest, MessagesSurviveAPublisherThatWentAway) {
  REQUIRE_BROKER(url);
  const std::string queue = unique_queue("persist");
  for (int i = 0; i < 20; ++i)
    shop::Publisher(*url, queue).publish("p-" + std::to_string(i), std::to_string(i));
  shop::Consumer con(*url, queue, /*prefetch=*/4);
  for (int i = 0; i < 20; ++i) {
    auto d = next_within(con, 5s);
    ASSERT_TRUE(d) << i;
    EXPECT_EQ(d->body, std::to_string(i));  // one publisher at a time: in order
    con.ack(d->delivery_tag);
  }
}

TEST(AmqpTest, ABrokerThatRefusesSaysWhy) {
  REQUIRE_BROKER(url);
  AmqpUrl wrong = *url;
  wrong.password = "not-the-password";
  try {
    shop::Publisher pub(wrong, unique_queue("auth"));
    FAIL() << "logged in with a wrong password";
  } catch (const AmqpError& e) {
    EXPECT_NE(std::string(e.what()).find("log in"), std::string::npos) << e.what();
  }

  AmqpUrl no_vhost = *url;
  no_vhost.vhost = "no-such-vhost";
  EXPECT_THROW(shop::Consumer(no_vhost, unique_queue("vhost")), AmqpError);

  AmqpUrl closed = *url;
  closed.port = 1;  // nothing listens there
  EXPECT_THROW(shop::Publisher(closed, "q"), AmqpError);
}

TEST(AmqpTest, ADeclarationTheBrokerRejectsThrowsWithItsReason) {
  REQUIRE_BROKER(url);
  try {
    shop::Consumer con(*url, "amq.reserved-" + unique_queue("x"));  // "amq." names are the broker's
    FAIL() << "declared a reserved queue name";
  } catch (const AmqpError& e) {
    EXPECT_NE(std::string(e.what()).find("ACCESS_REFUSED"), std::string::npos) << e.what();
  }
}

// ---- shop-consumer end to end -----------------------------------------------------------

#ifdef SHOP_CONSUMER_BIN

pid_t spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  return rc == 0 ? pid : -1;
}

// The child's wait status once it exited, or nullopt if it is still running at the deadline.
std::optional<int> wait_for_exit(pid_t pid, std::chrono::milliseconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  for (;;) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(20ms);
  }
}

std::int64_t stat(shop::Db& db, const std::string& name) {
  auto rows = db.query("SELECT n FROM t_stats WHERE name = $1", {name});
  return rows.empty() ? 0 : rows[0].integer(0);
}

class ShopConsumerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / unique_queue("shop-consumer");
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    for (pid_t pid : children_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  pid_t start(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {
        SHOP_CONSUMER_BIN, "--amqp",  std::getenv("IDEM_TEST_AMQP_URL"),      "--db",
        db_uri(),          "--store", "sqlite:" + (dir_ / "idem.db").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const pid_t pid = spawn(args);
    if (pid > 0) children_.push_back(pid);
    return pid;
  }
  void reaped(pid_t pid) { std::erase(children_, pid); }
  std::string db_uri() const { return "sqlite:" + (dir_ / "shop.db").string(); }

  std::filesystem::path dir_;
  std::vector<pid_t> children_;
};

TEST_F(ShopConsumerTest, UsageErrorsExit2) {
  const pid_t pid = start({"--no-such-flag"});
  ASSERT_GT(pid, 0);
  auto status = wait_for_exit(pid, 30s);
  reaped(pid);
  ASSERT_TRUE(status);
  ASSERT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 2);
}

// The README's failure mode: the consumer dies between its work and its ack, the broker
// redelivers, and every order still grants its points exactly once.
TEST_F(ShopConsumerTest, CrashBeforeAckThenRestartGrantsEveryOrderOnce) {
  REQUIRE_BROKER(url);
  const std::string queue = unique_queue("order.paid");
  constexpr int kOrders = 50;
  constexpr int kRepeats = 10;  // published twice with the same message id
  std::map<std::string, std::int64_t> expected_balance;
  std::map<std::string, std::int64_t> expected_points;
  {
    shop::Publisher pub(*url, queue);
    for (int i = 0; i < kOrders; ++i) {
      const std::string order = "order-" + std::to_string(i);
      const std::string user = "user-" + std::to_string(i % 7);
      const std::int64_t points = 10 + i;
      const std::string body = R"({"order_no":")" + order + R"(","user_id":")" + user + R"(","points":)" +
                               std::to_string(points) + "}";
      pub.publish("order.paid:" + order, body);
      if (i % (kOrders / kRepeats) == 0) pub.publish("order.paid:" + order, body);
      expected_points[order] = points;
      expected_balance[user] += points;
    }
  }

  auto db = shop::Db::open(db_uri());
  shop::ensure_schema(*db);

  const pid_t crasher = start({"--queue", queue, "--crash-before-ack", "10"});
  ASSERT_GT(crasher, 0);
  auto status = wait_for_exit(crasher, 60s);
  reaped(crasher);
  ASSERT_TRUE(status) << "shop-consumer --crash-before-ack 10 did not die";
  ASSERT_TRUE(WIFSIGNALED(*status)) << "status " << *status;
  EXPECT_EQ(WTERMSIG(*status), SIGKILL);
  const auto after_crash = db->query("SELECT count(*) FROM t_points")[0].integer(0);
  EXPECT_GE(after_crash, 10 - 1);  // duplicates among the first ten handled do not add rows
  EXPECT_LE(after_crash, 10);

  const pid_t survivor = start({"--queue", queue});
  ASSERT_GT(survivor, 0);
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  std::int64_t rows = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    rows = db->query("SELECT count(*) FROM t_points")[0].integer(0);
    if (rows >= kOrders) break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(rows, kOrders);

  // Every order exactly once, with its points; every balance the sum of its orders.
  std::map<std::string, std::int64_t> points;
  for (const auto& r : db->query("SELECT order_no, points FROM t_points")) points[r.text(0)] = r.integer(1);
  EXPECT_EQ(points, expected_points);
  std::map<std::string, std::int64_t> balance;
  for (const auto& r : db->query("SELECT user_id, balance FROM t_user_points"))
    balance[r.text(0)] = r.integer(1);
  EXPECT_EQ(balance, expected_balance);

  // The queue drains: the duplicates and the crashed delivery were all absorbed and acked.
  // (The consumer acks right after its transaction, so poll briefly for the last ones.)
  ::kill(survivor, SIGTERM);
  status = wait_for_exit(survivor, 30s);
  reaped(survivor);
  ASSERT_TRUE(status) << "shop-consumer ignored SIGTERM";
  ASSERT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 0);
  EXPECT_EQ(stat(*db, "consumer.processed"), kOrders);
  EXPECT_GE(stat(*db, "consumer.duplicate") + stat(*db, "consumer.ledger_unique"), kRepeats + 1)
      << "the repeated publishes and the redelivery after the crash";

  shop::Consumer drain(*url, queue);
  EXPECT_FALSE(drain.next(500ms)) << "a message was left unacknowledged";
}

TEST_F(ShopConsumerTest, APoisonMessageIsAckedAndCounted) {
  REQUIRE_BROKER(url);
  const std::string queue = unique_queue("poison");
  {
    shop::Publisher pub(*url, queue);
    pub.publish("order.paid:bad-1", "not json");
    pub.publish("order.paid:bad-2", R"({"order_no": 5})");
    pub.publish("order.paid:bad-3", R"({"order_no":"o","user_id":"u","points":-1})");
    pub.publish("order.paid:good", R"({"order_no":"good","user_id":"u","points":7})");
  }
  auto db = shop::Db::open(db_uri());
  shop::ensure_schema(*db);
  const pid_t pid = start({"--queue", queue});
  ASSERT_GT(pid, 0);
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline &&
         (stat(*db, "consumer.poison") < 3 || stat(*db, "consumer.processed") < 1)) {
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(stat(*db, "consumer.poison"), 3);
  EXPECT_EQ(stat(*db, "consumer.processed"), 1);
  ::kill(pid, SIGTERM);
  auto status = wait_for_exit(pid, 30s);
  reaped(pid);
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  shop::Consumer drain(*url, queue);
  EXPECT_FALSE(drain.next(500ms)) << "poison messages must be acked, not requeued forever";
}

// A crash after the grant committed but before the Deduplicator recorded it leaves a
// message the Deduplicator runs again: the ledger's unique order_no absorbs it.
TEST_F(ShopConsumerTest, TheLedgerAbsorbsAGrantTheDeduplicatorNeverSaw) {
  REQUIRE_BROKER(url);
  const std::string queue = unique_queue("ledger");
  auto db = shop::Db::open(db_uri());
  shop::ensure_schema(*db);
  db->exec("INSERT INTO t_points(order_no, user_id, points, created_at) VALUES ($1, $2, $3, $4)",
           {std::string("granted"), std::string("u"), std::int64_t{5}, std::int64_t{0}});
  db->exec("INSERT INTO t_user_points(user_id, balance) VALUES ($1, $2)",
           {std::string("u"), std::int64_t{5}});
  {
    shop::Publisher pub(*url, queue);
    pub.publish("order.paid:granted", R"({"order_no":"granted","user_id":"u","points":5})");
    pub.publish("order.paid:new", R"({"order_no":"new","user_id":"u","points":3})");
  }
  const pid_t pid = start({"--queue", queue});
  ASSERT_GT(pid, 0);
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline && stat(*db, "consumer.processed") < 1) {
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(stat(*db, "consumer.processed"), 1);
  EXPECT_EQ(stat(*db, "consumer.ledger_unique"), 1);
  EXPECT_EQ(
      db->query("SELECT balance FROM t_user_points WHERE user_id = $1", {std::string("u")})[0].integer(0), 8);
  ::kill(pid, SIGTERM);
  auto status = wait_for_exit(pid, 30s);
  reaped(pid);
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
}

#endif  // SHOP_CONSUMER_BIN

}  // namespace
