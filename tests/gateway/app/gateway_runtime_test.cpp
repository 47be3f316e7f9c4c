// The gateway runtime in-process (runtime_fixture.h), with a store decorator that fails on
// demand: store failures before and after the claim, and the server's own deadlines.
#include <poll.h>
#include <signal.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/json.hpp>

#include "gateway/app/runtime_fixture.h"

namespace idem::gateway {
namespace {

using namespace idem::gateway::testing;

TEST_F(GatewayRuntime, StoreUnavailableRejectsWith503AndRetryAfter) {
  store_.fail_begin = true;
  auto r = post("/reject", "k1");
  EXPECT_EQ(r.result_int(), 503u);
  EXPECT_EQ(type_of(r), "urn:idem:problem:store-unavailable");
  EXPECT_EQ(r[http::field::retry_after], "1");
  EXPECT_EQ(request(admin_port_, verb::get, "/readyz").result_int(), 503u);
  EXPECT_EQ(request(admin_port_, verb::get, "/healthz").result_int(), 200u);
  EXPECT_NE(metrics_->render().find("outcome=\"store_unavailable\"} 1"), std::string::npos);
}

// Problems caused by the store say so without its address or error text (docs/admin.md).
TEST_F(GatewayRuntime, StoreUnavailableAnswersNameNeitherTheStoreNorItsError) {
  store_.fail_begin = true;
  store_.fail_records = true;
  const e2e::Headers json = {{"Content-Type", "application/json"}};
  const std::vector<e2e::Response> answers = {
      post("/reject", "k-leak"),
      request(admin_port_, verb::get, "/readyz"),
      request(admin_port_, verb::post, "/v1/begin", json, R"({"scope":"s","key":"k"})"),
      request(admin_port_, verb::get, "/v1/records/s/k"),
      request(admin_port_, verb::delete_, "/v1/records/s/k"),
  };
  for (const e2e::Response& r : answers) {
    EXPECT_EQ(r.result_int(), 503u) << r.body();
    EXPECT_EQ(type_of(r), "urn:idem:problem:store-unavailable");
    EXPECT_EQ(r[http::field::retry_after], "1");
    for (const char* leak : {"10.9.8.7", "6390", "Connection refused", "redis"})
      EXPECT_EQ(r.body().find(leak), std::string::npos) << leak << " in " << r.body();
  }
}

// The control API tells "nothing was applied, retry" (503) from "the call may have been
// applied" (504 store-timeout): a caller that lost a commit's answer reads the record
// instead of retrying blindly (docs/admin.md, "Control API").
TEST_F(GatewayRuntime, AControlApiCallWhoseAnswerIsLostIs504StoreTimeout) {
  const e2e::Headers json = {{"Content-Type", "application/json"}};
  auto begun = request(admin_port_, verb::post, "/v1/begin", json, R"({"scope":"s","key":"k"})");
  ASSERT_EQ(begun.result_int(), 200u) << begun.body();
  const auto fence = boost::json::parse(begun.body()).at("fence").as_int64();

  store_.lose_replies = true;
  auto commit =
      request(admin_port_, verb::post, "/v1/commit", json,
              R"({"scope":"s","key":"k","fence":)" + std::to_string(fence) + R"(,"result":{"id":7}})");
  EXPECT_EQ(commit.result_int(), 504u) << commit.body();
  EXPECT_EQ(type_of(commit), "urn:idem:problem:store-timeout");
  EXPECT_EQ(commit[http::field::retry_after], "");  // not an invitation to retry as is
  EXPECT_EQ(commit.body().find(kStoreAddress), std::string::npos) << commit.body();
  auto begin = request(admin_port_, verb::post, "/v1/begin", json, R"({"scope":"s","key":"k2"})");
  EXPECT_EQ(begin.result_int(), 504u) << begin.body();
  EXPECT_EQ(type_of(begin), "urn:idem:problem:store-timeout");

  // It was applied: reading the record says so.
  store_.lose_replies = false;
  auto record = request(admin_port_, verb::get, "/v1/records/s/k");
  ASSERT_EQ(record.result_int(), 200u) << record.body();
  EXPECT_EQ(boost::json::parse(record.body()).at("state").as_string(), "done");

  store_.fail_commit = true;  // nothing applied: 503, retry as is
  auto refused = request(admin_port_, verb::post, "/v1/commit", json,
                         R"({"scope":"s","key":"k","fence":)" + std::to_string(fence) + R"(,"result":{}})");
  EXPECT_EQ(refused.result_int(), 503u) << refused.body();
  EXPECT_EQ(type_of(refused), "urn:idem:problem:store-unavailable");
  EXPECT_EQ(refused[http::field::retry_after], "1");
}

// A begin whose answer is lost may have claimed the key (here it did). The gateway gives
// that claim back by its owner, so the client's retry runs once instead of waiting for the
// ghost's lease and then finding the key uncertain (docs/gateway.md, "When the store fails").
TEST_F(GatewayRuntime, ABeginWhoseAnswerIsLostLeavesNoGhostClaim) {
  store_.lose_replies = true;
  auto first = post("/reject", "ghost");
  EXPECT_EQ(first.result_int(), 503u) << first.body();
  EXPECT_EQ(type_of(first), "urn:idem:problem:store-unavailable");
  store_.lose_replies = false;
  bool gone = false;
  for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       !gone && std::chrono::steady_clock::now() < until;) {
    gone = request(admin_port_, verb::get, "/v1/records/_/ghost?key_space=reject").result_int() == 404u;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling the admin API
  }
  ASSERT_TRUE(gone) << "the claim of the lost begin was never given back";
  auto retry = post("/reject", "ghost");
  EXPECT_EQ(retry.result_int(), 201u) << retry.body();
  EXPECT_EQ(upstream_count("ghost"), "1");
  EXPECT_NE(metrics_->render().find("idem_store_errors_total 1"), std::string::npos) << metrics_->render();
}

TEST_F(GatewayRuntime, StoreUnavailableUnderPassForwardsUnprotected) {
  store_.fail_begin = true;
  auto r = post("/pass", "k2");
  EXPECT_EQ(r.result_int(), 201u);
  EXPECT_EQ(r["Idempotency-Status"], "unprotected");
  EXPECT_NE(metrics_->render().find("route=\"pass\",outcome=\"unprotected\"} 1"), std::string::npos);
}

TEST_F(GatewayRuntime, StoreFailingAfterTheClaimStillAnswersTheUpstreamResponse) {
  store_.fail_commit = true;
  auto r = post("/reject", "k3");
  EXPECT_EQ(r.result_int(), 201u);
  EXPECT_EQ(metrics_->render().find("idem_store_errors_total 0"), std::string::npos);
  // The commit is retried in the background until the store answers, so once it does, the
  // repeat (which waits meanwhile) is replayed: the upstream ran once.
  store_.fail_commit = false;
  auto again = post("/reject", "k3");
  EXPECT_EQ(again.result_int(), 201u);
  EXPECT_EQ(again["Idempotent-Replayed"], "true");
  EXPECT_EQ(again.body(), r.body());
  EXPECT_EQ(upstream_count("k3"), "1");
}

TEST_F(GatewayRuntime, TokenConsumptionFailingUnderPassForwardsUnprotected) {
  const std::string token = issue_token();
  store_.fail_consume = true;
  auto r = request(port_, verb::post, "/token-pass", {{"Idempotency-Token", token}}, "{}");
  EXPECT_EQ(r.result_int(), 201u) << r.body();
  EXPECT_EQ(r["Idempotency-Status"], "unprotected");
  EXPECT_NE(metrics_->render().find("route=\"token-pass\",outcome=\"unprotected\"} 1"), std::string::npos);
}

TEST_F(GatewayRuntime, TokenConsumptionFailingUnderRejectIs503) {
  const std::string token = issue_token();
  store_.fail_consume = true;
  auto r = request(port_, verb::post, "/token-reject", {{"Idempotency-Token", token}}, "{}");
  EXPECT_EQ(r.result_int(), 503u) << r.body();
  EXPECT_EQ(type_of(r), "urn:idem:problem:store-unavailable");
  store_.fail_consume = false;  // the token was not consumed: it still works
  auto again = request(port_, verb::post, "/token-reject", {{"Idempotency-Token", token}}, "{}");
  EXPECT_EQ(again.result_int(), 201u) << again.body();
}

// A double click whose first request fails with a 5xx: the claim is released and the
// token restored (docs/gateway.md), and the waiting second click must be able to use it. The
// store answers restore_token late, so a gateway that released the claim before the
// token was re-armed would answer the second click token-invalid.
TEST_F(GatewayRuntime, ADuplicateWaitingOnAFailedTokenSubmissionRunsWithTheRestoredToken) {
  const std::string token = issue_token();
  store_.restore_delay_ms = 300;
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"Idempotency-Token", token}, {"X-Test-Status", "503"}, {"X-Test-Delay-Ms", "300"}};
  e2e::Response first;
  std::thread click1([&] { first = request(port_, verb::post, "/token-reject", headers, "{}"); });
  // The second click goes out once the first is at the upstream, so it finds the claim.
  ASSERT_TRUE(wait_at_upstream(token)) << "the first click never reached the upstream";
  auto second = request(port_, verb::post, "/token-reject", headers, "{}");
  click1.join();
  EXPECT_EQ(first.result_int(), 503u) << first.body();
  // The second click ran (the token was re-armed for it): the upstream's own answer,
  // its second execution, not 400 token-invalid.
  ASSERT_EQ(second.result_int(), 503u) << second.body();
  EXPECT_EQ(boost::json::parse(second.body()).at("execution").as_int64(), 2) << second.body();
  EXPECT_EQ(upstream_count(token), "2");
  // And the token is still good for the user's next attempt.
  store_.restore_delay_ms = 0;
  auto third = request(port_, verb::post, "/token-reject", {{"Idempotency-Token", token}}, "{}");
  EXPECT_EQ(third.result_int(), 201u) << third.body();
}

// An operator removes the record of a token submission while it is at the upstream, which
// then fails: the release is fenced, and the token stays used (docs/gateway.md: removing a
// token's record does not re-arm its token).
TEST_F(GatewayRuntime, ATokenWhoseClaimWasRemovedMidRequestIsNotReArmedByTheFailure) {
  const std::string token = issue_token();
  e2e::Response first;
  std::thread click([&] {
    first =
        request(port_, verb::post, "/token-reject",
                {{"Idempotency-Token", token}, {"X-Test-Status", "503"}, {"X-Test-Delay-Ms", "500"}}, "{}");
  });
  ASSERT_TRUE(wait_at_upstream(token)) << "the submission never reached the upstream";
  EXPECT_EQ(
      request(admin_port_, verb::delete_, "/v1/records/_/" + token + "?key_space=token-reject").result_int(),
      204u);
  click.join();
  EXPECT_EQ(first.result_int(), 503u) << first.body();
  auto again = request(port_, verb::post, "/token-reject", {{"Idempotency-Token", token}}, "{}");
  EXPECT_EQ(again.result_int(), 400u) << again.body();
  EXPECT_EQ(type_of(again), "urn:idem:problem:token-invalid");
  EXPECT_EQ(upstream_count(token), "1");
}

TEST_F(GatewayRuntime, ASlowHeadIsCutOffAtTheDeadline) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string out = e2e::raw_exchange(port_, "POST /reject HTTP/1.1\r\nHost: x\r\n");  // never finished
  EXPECT_EQ(out, "");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
}

// The first bytes of the answer to GET /healthz over `to`, or "" when it cannot connect.
std::string healthz_over(const boost::asio::ip::tcp::endpoint& to) {
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  boost::system::error_code ec;
  s.connect(to, ec);
  if (ec) return "";
  asio::write(
      s, asio::buffer(std::string("GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")),
      ec);
  std::string answer(64, '\0');
  answer.resize(s.read_some(asio::buffer(answer), ec));
  return answer;
}

// :PORT listens on every interface: one socket for IPv4 and IPv6 (IPv4 alone on a system
// without IPv6), where an empty host given to the resolver would have meant loopback.
TEST_F(GatewayRuntime, ListensOnEveryInterface) {
  namespace asio = boost::asio;
  using asio::ip::tcp;
  const tcp::endpoint bound = server_->listen_admin({"", 0});
  EXPECT_TRUE(bound.address().is_unspecified()) << bound;
  EXPECT_TRUE(healthz_over({asio::ip::make_address("127.0.0.1"), bound.port()}).starts_with("HTTP/1.1 200"));
  if (bound.address().is_v6()) {
    EXPECT_TRUE(healthz_over({asio::ip::make_address("::1"), bound.port()}).starts_with("HTTP/1.1 200"));
  }
}

// A gateway that accepts two client connections at most (and two admin connections), and
// lets idle ones stay.
class GatewayRuntimeTwoConnections : public GatewayRuntime {
 protected:
  void limit(Config& c) const override {
    c.limits.connections = c.limits.connections_per_client = 2;
    c.admin.limits.connections = c.admin.limits.connections_per_client = 2;
    c.limits.header_timeout = c.admin.limits.header_timeout = std::chrono::seconds(30);
  }
};

// A connection that has sent `busy` (a request whose body has not all come) and waits.
struct Held {
  Held(boost::asio::io_context& io, unsigned short port, const std::string& busy) : socket(io) {
    socket.connect({boost::asio::ip::make_address("127.0.0.1"), port});
    if (!busy.empty()) boost::asio::write(socket, boost::asio::buffer(busy));
  }
  boost::asio::ip::tcp::socket socket;
};

// Whether `c` is answered within `ms` milliseconds (poll for input: an answer or a close).
bool answered_within(boost::asio::ip::tcp::socket& c, int ms) {
  pollfd pfd{c.native_handle(), POLLIN, 0};
  return ::poll(&pfd, 1, ms) == 1;
}

// Until the listener's connections are `open`, `waiting` of them for a request (the server's
// own account: the moment a session has taken a request in); false after 10 s.
bool settles(const Server& server, bool admin, std::size_t open, std::size_t waiting) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    const Server::Connections now = server.connections(admin);
    if (now.open == open && now.waiting == waiting) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// Two connections busy with a request each, then a third asked to serve `request`: it
// waits in the kernel's backlog until one of the two closes.
void expect_third_connection_waits(const Server& server, bool admin, unsigned short port,
                                   const std::string& busy, const std::string& request) {
  namespace asio = boost::asio;
  asio::io_context io;
  Held a(io, port, busy), b(io, port, busy);
  ASSERT_TRUE(settles(server, admin, 2, 0)) << "both requests taken in: busy, not waiting";
  Held c(io, port, request);  // completes in the kernel's backlog
  EXPECT_FALSE(answered_within(c.socket, 300)) << "a third connection was served while two were busy";
  a.socket.close();
  ASSERT_TRUE(answered_within(c.socket, 5000)) << "the waiting connection was not served after one closed";
  std::string answer(64, '\0');
  boost::system::error_code ec;
  answer.resize(c.socket.read_some(asio::buffer(answer), ec));
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200")) << answer;
}

// Two idle connections (accepted, no request yet), then a third: the one that has waited
// longest for a request is closed to make room, and the third is served at once.
void expect_the_longest_waiting_makes_room(const Server& server, bool admin, unsigned short port,
                                           const std::string& request) {
  namespace asio = boost::asio;
  asio::io_context io;
  Held a(io, port, "");
  ASSERT_TRUE(settles(server, admin, 1, 1));
  Held b(io, port, "");
  ASSERT_TRUE(settles(server, admin, 2, 2));
  Held c(io, port, request);
  ASSERT_TRUE(answered_within(c.socket, 5000)) << "the third connection was not served";
  std::string answer(64, '\0');
  boost::system::error_code ec;
  answer.resize(c.socket.read_some(asio::buffer(answer), ec));
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200")) << answer;
  ASSERT_TRUE(answered_within(a.socket, 1000)) << "the oldest idle connection was not closed";
  char byte;
  EXPECT_EQ(a.socket.read_some(asio::buffer(&byte, 1), ec), 0u);
  EXPECT_EQ(ec, asio::error::eof) << "closed, without an answer";
  EXPECT_FALSE(answered_within(b.socket, 100)) << "the younger idle connection stays";
}

constexpr const char* kBusy =
    "POST /reject HTTP/1.1\r\nHost: x\r\nIdempotency-Key: busy\r\nContent-Length: 10\r\n\r\n12345";

TEST_F(GatewayRuntimeTwoConnections, AtTheLimitANewConnectionWaitsWhileTheOthersAreBusy) {
  expect_third_connection_waits(*server_, false, port_, kBusy,
                                "GET /limited HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
}

TEST_F(GatewayRuntimeTwoConnections, AtTheLimitTheConnectionWaitingLongestMakesRoom) {
  expect_the_longest_waiting_makes_room(*server_, false, port_,
                                        "GET /limited HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
}

// The admin listener has caps of its own, apart from the client listener's; idle sockets
// cannot keep a probe out.
TEST_F(GatewayRuntimeTwoConnections, AtTheAdminLimitTheConnectionWaitingLongestMakesRoomForAProbe) {
  expect_the_longest_waiting_makes_room(
      *server_, true, admin_port_, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  expect_third_connection_waits(*server_, true, admin_port_,
                                "POST /v1/begin HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                                "application/json\r\nContent-Length: 10\r\n\r\n{",
                                "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  // The client listener is not held by the admin connections.
  EXPECT_EQ(post("/reject", "admin-cap").result_int(), 201u);
}

// One cap on the request-body bytes held across all connections: a request that would
// pass it is refused 503 overloaded (with Retry-After, counted), not buffered; the bytes
// are given back when a request ends.
class GatewayRuntimeSmallBodyBudget : public GatewayRuntime {
 protected:
  void limit(Config& c) const override {
    c.limits.buffered_bodies = c.limits.buffered_bodies_per_client = 1000;
    c.limits.header_timeout = c.admin.limits.header_timeout = std::chrono::seconds(30);
  }
};

TEST_F(GatewayRuntimeSmallBodyBudget, RequestsPastTheBodyBudgetAreRefusedOverloaded) {
  namespace asio = boost::asio;
  using asio::ip::tcp;
  asio::io_context io;
  const tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port_);
  // A slow client holds 800 bytes of the budget with a body it has not finished sending.
  tcp::socket slow(io);
  slow.connect(ep);
  const std::string body(800, 'a');
  asio::write(slow, asio::buffer("POST /reject HTTP/1.1\r\nHost: x\r\nIdempotency-Key: slow\r\n"
                                 "Content-Length: 800\r\nConnection: close\r\n\r\n" +
                                 body.substr(0, 100)));
  // Wait until the slow request holds its share: a second one of 800 bytes does not fit.
  e2e::Response refused;
  for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
       std::chrono::steady_clock::now() < until;) {
    refused = request(port_, verb::post, "/reject", {{"Idempotency-Key", "second"}}, body);
    if (refused.result_int() == 503) break;
  }
  ASSERT_EQ(refused.result_int(), 503u) << refused.body();
  EXPECT_NE(refused.body().find("urn:idem:problem:overloaded"), std::string::npos);
  EXPECT_EQ(refused[http::field::retry_after], "1");
  // Chunked bodies are held chunk by chunk: refused as well once they do not fit.
  std::string chunked = e2e::raw_exchange(port_,
                                          "POST /reject HTTP/1.1\r\nHost: x\r\nIdempotency-Key: chunked\r\n"
                                          "Transfer-Encoding: chunked\r\n\r\n320\r\n" +
                                              body + "\r\n0\r\n\r\n");
  EXPECT_TRUE(chunked.starts_with("HTTP/1.1 503")) << chunked.substr(0, 200);
  // Small requests still fit beside the slow one.
  EXPECT_EQ(post("/reject", "small").result_int(), 201u);
  // Once the slow request is done, its share is free again.
  asio::write(slow, asio::buffer(body.substr(100)));
  std::string answer(64, '\0');
  boost::system::error_code ec;
  answer.resize(slow.read_some(asio::buffer(answer), ec));
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 201")) << answer;
  EXPECT_EQ(request(port_, verb::post, "/reject", {{"Idempotency-Key", "third"}}, body).result_int(), 201u);
  const std::string metrics = request(admin_port_, verb::get, "/metrics").body();
  EXPECT_NE(metrics.find("idem_overloaded_total 2"), std::string::npos) << metrics;
  // Unmatched requests stream: they hold nothing of the budget, whatever their size.
  EXPECT_EQ(request(port_, verb::post, "/unmatched", {}, std::string(100000, 'b')).result_int(), 201u);
}

// A credentialed repeat of a key whose record binds no one (a callback without
// credentials) answers as one without credentials. When that record is gone by the
// repeat's next begin, the claim it makes must not be one without credentials: another
// principal would then be replayed its answer (docs/http.md, "Whose answer a replay is").
TEST_F(GatewayRuntime, AClaimMadeAfterAnUnboundRecordWentAwayIsBoundToItsPrincipal) {
  const std::string key = "unbound-then-gone";
  ASSERT_EQ(post("/orders", key).result_int(), 201u);  // no credentials: binds no one
  store_.remove_after_get = true;
  auto mine =
      request(port_, verb::post, "/orders", {{"Idempotency-Key", key}, {"Authorization", "Bearer a"}}, "{}");
  EXPECT_EQ(mine.result_int(), 201u) << mine.body();
  EXPECT_FALSE(store_.remove_after_get) << "the record was never read back";
  auto other =
      request(port_, verb::post, "/orders", {{"Idempotency-Key", key}, {"Authorization", "Bearer b"}}, "{}");
  EXPECT_EQ(other.result_int(), 409u) << other.body();
  EXPECT_NE(other.body().find("\"type\":\"urn:idem:problem:principal-mismatch\""), std::string::npos)
      << other.body();
}

// Within what the open-files limit leaves (max_client_connections: descriptors for client
// connections, each with its upstream connection), the admin listener takes at most half
// and the client listener what the admin connections leave; per-client caps follow.
TEST_F(GatewayRuntime, TheListenersCapsStayWithinTheDescriptorsLeft) {
  RuntimeOptions options;
  options.threads = 1;
  options.max_client_connections = 100;
  Config config = config_;
  config.limits = kClientLimits;
  config.admin.limits = kAdminLimits;
  Runtime bounded(config, store_, std::move(options));
  const ServerLimits& l = bounded.server().limits();
  EXPECT_EQ(l.admin.connections, 50u);
  EXPECT_EQ(l.admin.connections_per_client, 50u);
  EXPECT_EQ(l.client.connections, 75u);
  EXPECT_EQ(l.client.connections_per_client, 75u);
  EXPECT_LE(2 * l.client.connections + l.admin.connections, 2 * 100u);
}
}  // namespace
}  // namespace idem::gateway
