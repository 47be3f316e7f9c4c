// End to end: the protected request pipeline (docs/gateway.md) through the `idem` binary
// in front of the real test upstream.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include <boost/asio/ip/tcp.hpp>

#include "e2e/e2e_fixture.h"
#include "gateway/model/request_identity.h"

namespace idem::e2e {
namespace {

TEST_F(GatewayE2E, FirstRequestForwardedThenReplayedIdentically) {
  const std::string key = unique("first");
  Response first = post("/orders", key, R"({"item":1})", {{"Idempotency-Fence", "999"}});
  ASSERT_EQ(first.result_int(), 201u) << first.body();
  EXPECT_EQ(header(first, "Idempotent-Replayed"), "");
  EXPECT_EQ(body_json(first).at("execution").as_int64(), 1);
  EXPECT_NE(body_json(first).at("fence").as_string(), "999") << "client fence must never reach the upstream";
  EXPECT_NE(body_json(first).at("fence").as_string(), "");

  Response again = post("/orders", key, R"({"item":1})");
  ASSERT_EQ(again.result_int(), 201u);
  EXPECT_EQ(header(again, "Idempotent-Replayed"), "true");
  EXPECT_EQ(again.body(), first.body());
  EXPECT_EQ(header(again, "Location"), header(first, "Location"));
  EXPECT_EQ(header(again, "Content-Type"), "application/json");
  EXPECT_EQ(header(again, "Set-Cookie"), "");
  EXPECT_EQ(header(again, "Content-Length"), std::to_string(first.body().size()));
  EXPECT_EQ(executions(key), 1);
}

TEST_F(GatewayE2E, FiftyConcurrentIdenticalRequestsExecuteOnce) {
  const std::string key = unique("storm");
  std::vector<Response> answers(50);
  std::vector<std::thread> threads;
  for (int i = 0; i < 50; ++i)
    threads.emplace_back([&, i] { answers[i] = post("/orders", key, "{}", {{"X-Test-Delay-Ms", "300"}}); });
  for (auto& t : threads) t.join();
  for (const auto& a : answers) {
    ASSERT_EQ(a.result_int(), 201u) << a.body();
    EXPECT_EQ(a.body(), answers[0].body());
  }
  EXPECT_EQ(executions(key), 1);
}

TEST_F(GatewayE2E, SameKeyDifferentBodyIsKeyReused) {
  const std::string key = unique("reuse");
  ASSERT_EQ(post("/orders", key, R"({"a":1})").result_int(), 201u);
  Response r = post("/orders", key, R"({"a":2})");
  EXPECT_EQ(r.result_int(), 422u);
  EXPECT_EQ(problem_type(r), "urn:idem:problem:key-reused");
  EXPECT_EQ(header(r, "Content-Type"), "application/problem+json");
  EXPECT_EQ(executions(key), 1);
}

TEST_F(GatewayE2E, InFlightRepeatWithWaitZeroIsInProgress) {
  const std::string key = unique("busy");
  std::thread first([&] { post("/nowait", key, "{}", {{"X-Test-Delay-Ms", "2000"}}); });
  ASSERT_TRUE(reached_upstream(key));
  Response r = post("/nowait", key, "{}", {{"X-Test-Delay-Ms", "2000"}});
  first.join();
  EXPECT_EQ(r.result_int(), 409u);
  EXPECT_EQ(problem_type(r), "urn:idem:problem:in-progress");
  EXPECT_FALSE(header(r, "Retry-After").empty());
  EXPECT_EQ(executions(key), 1);
}

TEST_F(GatewayE2E, InFlightRepeatWaitsAndGetsTheFirstResponse) {
  const std::string key = unique("wait");
  Response first_answer;
  std::thread first([&] { first_answer = post("/orders", key, "{}", {{"X-Test-Delay-Ms", "800"}}); });
  ASSERT_TRUE(reached_upstream(key));
  Response r = post("/orders", key, "{}", {{"X-Test-Delay-Ms", "800"}});
  first.join();
  EXPECT_EQ(r.result_int(), 201u);
  EXPECT_EQ(header(r, "Idempotent-Replayed"), "true");
  EXPECT_EQ(r.body(), first_answer.body());
}

TEST_F(GatewayE2E, KeyMissingAndKeyInvalid) {
  Response missing = post("/orders", "");
  EXPECT_EQ(missing.result_int(), 400u);
  EXPECT_EQ(problem_type(missing), "urn:idem:problem:key-missing");
  Response invalid = post("/orders", std::string(300, 'k'));
  EXPECT_EQ(invalid.result_int(), 400u);
  EXPECT_EQ(problem_type(invalid), "urn:idem:problem:key-invalid");
}

TEST_F(GatewayE2E, Upstream5xxReleasesSoARetryRunsAgain) {
  const std::string key = unique("five");
  Response r = post("/orders", key, "{}", {{"X-Test-Status", "500"}});
  EXPECT_EQ(r.result_int(), 500u);
  Response retry = post("/orders", key, "{}");
  EXPECT_EQ(retry.result_int(), 201u);
  EXPECT_EQ(header(retry, "Idempotent-Replayed"), "");
  EXPECT_EQ(executions(key), 2);
}

TEST_F(GatewayE2E, Upstream429ReleasesAnd5xxIsCachedWithCache5xx) {
  const std::string key = unique("429");
  EXPECT_EQ(post("/orders", key, "{}", {{"X-Test-Status", "429"}}).result_int(), 429u);
  EXPECT_EQ(post("/orders", key, "{}").result_int(), 201u);
  EXPECT_EQ(executions(key), 2);

  const std::string cached = unique("cached");
  EXPECT_EQ(post("/cached", cached, "{}", {{"X-Test-Status", "503"}}).result_int(), 503u);
  Response again = post("/cached", cached, "{}");
  EXPECT_EQ(again.result_int(), 503u);
  EXPECT_EQ(header(again, "Idempotent-Replayed"), "true");
  EXPECT_EQ(executions(cached), 1);
}

TEST_F(GatewayE2E, EveryReleasingStatusLetsARetryRunAgain) {
  for (const char* status : {"408", "409", "425", "429", "500", "502", "503", "504"}) {
    const std::string key = unique("release");
    Response r = post("/orders", key, "{}", {{"X-Test-Status", status}});
    EXPECT_EQ(std::to_string(r.result_int()), status);
    EXPECT_EQ(post("/orders", key).result_int(), 201u) << status;
    EXPECT_EQ(executions(key), 2) << status;
  }
  const std::string kept = unique("kept");
  EXPECT_EQ(post("/orders", kept, "{}", {{"X-Test-Status", "404"}}).result_int(), 404u);
  Response again = post("/orders", kept);
  EXPECT_EQ(again.result_int(), 404u);
  EXPECT_EQ(header(again, "Idempotent-Replayed"), "true");
  EXPECT_EQ(executions(kept), 1);
}

TEST_F(GatewayE2E, TokenDoubleClickUnderOnDuplicateRejectIs409Duplicate) {
  const std::string token(body_json(request(port_, verb::post, "/_idem/tokens")).at("token").as_string());
  EXPECT_EQ(request(port_, verb::post, "/once-forms/a", {{"Idempotency-Token", token}}).result_int(), 201u);
  Response dbl = request(port_, verb::post, "/once-forms/a", {{"Idempotency-Token", token}});
  EXPECT_EQ(dbl.result_int(), 409u);
  EXPECT_EQ(problem_type(dbl), "urn:idem:problem:duplicate");
}

TEST_F(GatewayE2E, TimeoutIs504ThenOutcomeUncertain) {
  const std::string key = unique("timeout");
  Response r = post("/slow", key, "{}", {{"X-Test-Delay-Ms", "1500"}});
  EXPECT_EQ(r.result_int(), 504u);
  EXPECT_EQ(problem_type(r), "urn:idem:problem:upstream-timeout");
  Response again = post("/slow", key, "{}");
  EXPECT_EQ(again.result_int(), 409u);
  EXPECT_EQ(problem_type(again), "urn:idem:problem:outcome-uncertain");
  EXPECT_EQ(executions(key), 1);
}

TEST_F(GatewayE2E, BrokenAfterSendingIs502ThenOutcomeUncertain) {
  const std::string key = unique("broken");
  Response r = post("/orders", key, "{}", {{"X-Test-Drop", "after"}});
  EXPECT_EQ(r.result_int(), 502u);
  EXPECT_EQ(problem_type(r), "urn:idem:problem:upstream-unavailable");
  Response again = post("/orders", key, "{}");
  EXPECT_EQ(again.result_int(), 409u);
  EXPECT_EQ(problem_type(again), "urn:idem:problem:outcome-uncertain");
  EXPECT_EQ(executions(key), 1);
}

TEST_F(GatewayE2E, OnUncertainRetryKeepsTheClaimThenRunsAgainWithAHigherFence) {
  const std::string key = unique("retry");
  Response r = post("/retry", key, "{}", {{"X-Test-Delay-Ms", "1500"}});
  EXPECT_EQ(r.result_int(), 504u);
  Response busy = post("/retry", key, "{}");
  EXPECT_EQ(busy.result_int(), 409u);
  EXPECT_EQ(problem_type(busy), "urn:idem:problem:in-progress");
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  Response rerun = post("/retry", key, "{}");
  EXPECT_EQ(rerun.result_int(), 201u) << rerun.body();
  EXPECT_EQ(executions(key), 2);
}

TEST_F(GatewayE2E, OnDuplicateRejectAnswers409Duplicate) {
  const std::string key = unique("once");
  EXPECT_EQ(post("/once", key).result_int(), 201u);
  Response r = post("/once", key);
  EXPECT_EQ(r.result_int(), 409u);
  EXPECT_EQ(problem_type(r), "urn:idem:problem:duplicate");
}

TEST_F(GatewayE2E, ALargeBodyOverMaxBodyStillGets413) {
  Response big = post("/small", unique("huge"), std::string(4 * 1024 * 1024, 'x'));
  EXPECT_EQ(big.result_int(), 413u);
  EXPECT_EQ(problem_type(big), "urn:idem:problem:body-too-large");
}

TEST_F(GatewayE2E, BodyTooLargeAndResultNotStored) {
  Response big = post("/small", unique("big"), std::string(200, 'x'));
  EXPECT_EQ(big.result_int(), 413u);
  EXPECT_EQ(problem_type(big), "urn:idem:problem:body-too-large");

  const std::string key = unique("large-result");
  Response first = post("/small", key, "{}", {{"X-Test-Body-Size", "1000"}});
  EXPECT_EQ(first.result_int(), 201u);
  EXPECT_EQ(first.body().size(), 1000u);
  Response again = post("/small", key, "{}");
  EXPECT_EQ(again.result_int(), 409u);
  EXPECT_EQ(problem_type(again), "urn:idem:problem:result-not-stored");
  EXPECT_EQ(executions(key), 1);
}

TEST_F(GatewayE2E, SubjectMissingAndScopesSeparateUsers) {
  Response r = post("/user", unique("u"));
  EXPECT_EQ(r.result_int(), 400u);
  EXPECT_EQ(problem_type(r), "urn:idem:problem:subject-missing");
  const std::string key = unique("shared");
  Response alice = post("/user", key, "{}", {{"X-User-Id", "alice"}});
  Response bob = post("/user", key, "{}", {{"X-User-Id", "bob"}});
  EXPECT_EQ(alice.result_int(), 201u);
  EXPECT_EQ(bob.result_int(), 201u);
  EXPECT_EQ(header(bob, "Idempotent-Replayed"), "");
  EXPECT_EQ(executions(key), 2);
}

TEST_F(GatewayE2E, TemplateKeyFromJsonBody) {
  const std::string id = unique("trade");
  Response first = post("/pay", "", R"({"id":")" + id + R"("})");
  EXPECT_EQ(first.result_int(), 201u) << first.body();
  Response again = post("/pay", "", R"({"id":")" + id + R"("})");
  EXPECT_EQ(header(again, "Idempotent-Replayed"), "true");
  EXPECT_EQ(executions("pay:" + id), 1);
  Response not_json = request(port_, verb::post, "/pay", {{"Content-Type", "text/plain"}}, "nope");
  EXPECT_EQ(problem_type(not_json), "urn:idem:problem:body-invalid");
  Response missing = post("/pay", "", R"({"other":1})");
  EXPECT_EQ(problem_type(missing), "urn:idem:problem:key-missing");
}

// The callback's key chosen by a client on another route lands in that route's key space:
// the real callback still runs.
TEST_F(GatewayE2E, AClientKeyCannotReachAnotherRoutesRecord) {
  const std::string id = unique("T");
  Response hijack = post("/orders", "pay:" + id);
  EXPECT_EQ(hijack.result_int(), 201u) << hijack.body();
  Response callback = post("/pay", "", R"({"id":")" + id + R"("})");
  EXPECT_EQ(callback.result_int(), 201u) << callback.body();
  EXPECT_EQ(header(callback, "Idempotent-Replayed"), "");
  EXPECT_EQ(executions("pay:" + id), 2);  // the upstream got the rendered key both times
}

// Two Snowflake ids, as Jackson writes a Java Long, that one double cannot tell apart.
TEST_F(GatewayE2E, TemplateKeysKeepEveryDigitOfANumber) {
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "17%07d", static_cast<int>(::getpid() % 10000000));
  const std::string a = std::string(prefix) + "0000000001", b = std::string(prefix) + "0000000002";
  Response first = post("/pay", "", R"({"id":)" + a + "}");
  Response second = post("/pay", "", R"({"id":)" + b + "}");
  EXPECT_EQ(first.result_int(), 201u) << first.body();
  EXPECT_EQ(header(second, "Idempotent-Replayed"), "");
  EXPECT_EQ(executions("pay:" + a), 1);
  EXPECT_EQ(executions("pay:" + b), 1);
}

TEST_F(GatewayE2E, OneTimeTokens) {
  Response issued = request(port_, verb::post, "/_idem/tokens");
  ASSERT_EQ(issued.result_int(), 201u) << issued.body();
  EXPECT_EQ(header(issued, "Cache-Control"), "no-store");
  const std::string token(body_json(issued).at("token").as_string());
  EXPECT_EQ(body_json(issued).at("expires_in").as_int64(), 600);

  Response missing = request(port_, verb::post, "/forms/a");
  EXPECT_EQ(problem_type(missing), "urn:idem:problem:token-missing");
  Response bogus = request(port_, verb::post, "/forms/a", {{"Idempotency-Token", "never-issued"}});
  EXPECT_EQ(problem_type(bogus), "urn:idem:problem:token-invalid");

  // A failed first use restores the token, so the user can submit again with it.
  Response failed =
      request(port_, verb::post, "/forms/a", {{"Idempotency-Token", token}, {"X-Test-Status", "500"}});
  EXPECT_EQ(failed.result_int(), 500u);
  Response first = request(port_, verb::post, "/forms/a", {{"Idempotency-Token", token}});
  EXPECT_EQ(first.result_int(), 201u) << first.body();
  Response dbl = request(port_, verb::post, "/forms/a", {{"Idempotency-Token", token}});
  EXPECT_EQ(dbl.result_int(), 201u);
  EXPECT_EQ(header(dbl, "Idempotent-Replayed"), "true");
  EXPECT_EQ(dbl.body(), first.body());
}

TEST_F(GatewayE2E, LockModeBusyIs409LockedAtOnce) {
  const std::string sku = unique("sku");
  std::atomic<bool> first_done{false};
  std::thread first([&] {
    post("/skus/" + sku + "/deduct", "", "{}", {{"X-Test-Delay-Ms", "2000"}});
    first_done = true;
  });
  ASSERT_TRUE(reached_upstream("stock:" + sku));
  Response r = post("/skus/" + sku + "/deduct", "", "{}");
  EXPECT_FALSE(first_done) << "the second request waited for the lock instead of answering at once";
  first.join();
  EXPECT_EQ(r.result_int(), 409u);
  EXPECT_EQ(problem_type(r), "urn:idem:problem:locked");
  EXPECT_FALSE(header(r, "Retry-After").empty());
  Response after = post("/skus/" + sku + "/deduct", "", "{}");
  EXPECT_EQ(after.result_int(), 201u);  // no replay in lock mode
  EXPECT_EQ(executions("stock:" + sku), 2);
}

TEST_F(GatewayE2E, OptionalKeyAndUnmatchedRequestsAreForwarded) {
  Response r = post("/optional", "");
  EXPECT_EQ(r.result_int(), 201u);
  Response unmatched = request(port_, verb::get, "/anything?x=1", {{"Idempotency-Fence", "7"}});
  EXPECT_EQ(unmatched.result_int(), 200u);
  EXPECT_EQ(body_json(unmatched).at("fence").as_string(), "");
}

TEST_F(GatewayE2E, MalformedAndOversizedHeadsAreRejectedWithProblems) {
  std::string bad = raw_exchange(port_, "THIS IS NOT HTTP\r\n\r\n");
  EXPECT_NE(bad.find("400"), std::string::npos) << bad;
  EXPECT_NE(bad.find("application/problem+json"), std::string::npos);
  std::string big =
      raw_exchange(port_, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n");
  EXPECT_NE(big.find("431"), std::string::npos) << big.substr(0, 200);
}

TEST_F(GatewayE2E, ProtectedPathsCannotBeReachedUnderAnotherSpelling) {
  const std::string key = unique("spelling");
  std::string absolute = raw_exchange(port_,
                                      "POST http://upstream.example/orders HTTP/1.1\r\nHost: x\r\n"
                                      "Content-Length: 2\r\nConnection: close\r\n\r\n{}");
  EXPECT_NE(absolute.find("urn:idem:problem:key-missing"), std::string::npos) << absolute;
  std::string dots =
      raw_exchange(port_, "POST /x/%2E%2E/orders HTTP/1.1\r\nHost: x\r\nIdempotency-Key: " + key +
                              "\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}");
  EXPECT_NE(dots.find("400"), std::string::npos) << dots;
  EXPECT_EQ(executions(key), 0);
}

TEST_F(GatewayE2E, ChunkedBodyOverMaxBodyIs413) {
  std::string chunk(150, 'x');
  std::string out =
      raw_exchange(port_, "POST /small HTTP/1.1\r\nHost: x\r\nIdempotency-Key: " + unique("chunk") +
                              "\r\nTransfer-Encoding: chunked\r\n\r\n96\r\n" + chunk + "\r\n0\r\n\r\n");
  EXPECT_NE(out.find("413"), std::string::npos) << out;
  EXPECT_NE(out.find("urn:idem:problem:body-too-large"), std::string::npos);
}

TEST_F(GatewayE2E, PipelinedRequestsAreAnsweredInOrder) {
  const std::string k1 = unique("pipe"), k2 = unique("pipe");
  auto req = [](const std::string& key, const char* extra) {
    return "POST /orders HTTP/1.1\r\nHost: x\r\nIdempotency-Key: " + key + "\r\nContent-Length: 2\r\n" +
           extra + "\r\n{}";
  };
  std::string out = raw_exchange(port_, req(k1, "") + req(k2, "") + req(k1, "Connection: close\r\n"));
  const auto first = out.find(k1), second = out.find(k2), third = out.find(k1, second);
  EXPECT_NE(first, std::string::npos) << out;
  EXPECT_LT(first, second);
  EXPECT_NE(third, std::string::npos);
  EXPECT_NE(out.find("Idempotent-Replayed: true"), std::string::npos);
}

TEST_F(GatewayE2E, TheLeaseIsRenewedWhileTheUpstreamWorks) {
  const std::string key = unique("renew");
  Response first_answer;
  std::thread first([&] { first_answer = post("/renewed", key, "{}", {{"X-Test-Delay-Ms", "2000"}}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // past the first lease
  Response r = post("/renewed", key);
  first.join();
  EXPECT_EQ(r.result_int(), 409u);
  EXPECT_EQ(problem_type(r), "urn:idem:problem:in-progress");
  EXPECT_EQ(first_answer.result_int(), 201u);
  EXPECT_EQ(executions(key), 1);
}

// Lock mode renews its lock the same way: a request past the first lease finds it held.
TEST_F(GatewayE2E, TheLockIsRenewedWhileTheUpstreamWorks) {
  const std::string sku = unique("sku");
  Response first_answer;
  std::thread first([&] {
    first_answer = post("/renewed-skus/" + sku + "/deduct", "", "{}", {{"X-Test-Delay-Ms", "2000"}});
  });
  ASSERT_TRUE(reached_upstream("stock:" + sku));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // past the first lease
  Response r = post("/renewed-skus/" + sku + "/deduct", "", "{}");
  first.join();
  EXPECT_EQ(r.result_int(), 409u);
  EXPECT_EQ(problem_type(r), "urn:idem:problem:locked");
  EXPECT_EQ(first_answer.result_int(), 201u);
  EXPECT_EQ(executions("stock:" + sku), 1);
}

TEST_F(GatewayE2E, RecordRemovedMidRequestIsAConflictButTheClientGetsItsResponse) {
  const std::string key = unique("removed");
  Response first_answer;
  std::thread first([&] { first_answer = post("/orders", key, "{}", {{"X-Test-Delay-Ms", "600"}}); });
  ASSERT_TRUE(reached_upstream(key));
  EXPECT_EQ(request(admin_, verb::delete_, "/v1/records/_/" + key + "?key_space=orders").result_int(), 204u);
  first.join();
  EXPECT_EQ(first_answer.result_int(), 201u);
  EXPECT_EQ(request(admin_, verb::get, "/v1/records/_/orders:" + key).result_int(),
            404u);  // nothing stored over it
  Response metrics = request(admin_, verb::get, "/metrics");
  EXPECT_EQ(metrics.body().find("idem_store_conflicts_total 0"), std::string::npos);
}

TEST_F(GatewayE2E, ExpectContinueAndHeadAreProxiedCorrectly) {
  const std::string key = unique("expect");
  Response r = post("/orders", key, std::string(4000, ' ') + "{}", {{"Expect", "100-continue"}});
  EXPECT_EQ(r.result_int(), 201u) << r.body();
  Response head = request(port_, verb::head, "/head-check");
  EXPECT_EQ(head.result_int(), 200u);
  EXPECT_NE(header(head, "Content-Length"), "0");
}

TEST_F(GatewayE2E, AClientThatDisconnectsDoesNotCancelTheUpstreamExchange) {
  const std::string key = unique("gone");
  send_and_close(
      port_, "POST /orders HTTP/1.1\r\nHost: x\r\nIdempotency-Key: " + key +
                 "\r\nX-Test-Delay-Ms: 400\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
  ASSERT_TRUE(record_done("orders", key)) << "the exchange did not finish after the client left";
  Response retry = post("/orders", key);
  EXPECT_EQ(retry.result_int(), 201u);
  EXPECT_EQ(header(retry, "Idempotent-Replayed"), "true");
  EXPECT_EQ(executions(key), 1);
}

TEST_F(GatewayE2E, APooledConnectionTheUpstreamClosedIsNotUsed) {
  for (int i = 0; i < 5; ++i) {
    const std::string key = unique("pool");
    Response r = post("/orders", key, "{}", {{"X-Test-Close", "1"}});
    EXPECT_EQ(r.result_int(), 201u) << i << ": " << r.body();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    Response next = request(port_, verb::get, "/after-close");
    EXPECT_EQ(next.result_int(), 200u) << i << ": " << next.body();
  }
}

TEST_F(GatewayE2E, InterimAnswersFromTheUpstreamAreSkipped) {
  const std::string key = unique("interim");
  Response first = post("/orders", key, "{}", {{"X-Test-Interim", "1"}});
  ASSERT_EQ(first.result_int(), 201u) << first.body();
  EXPECT_EQ(body_json(first).at("execution").as_int64(), 1);
  Response again = post("/orders", key);
  EXPECT_EQ(again.result_int(), 201u);
  EXPECT_EQ(again.body(), first.body());
  EXPECT_EQ(executions(key), 1);
}

TEST_F(GatewayE2E, TwentySlowlorisConnectionsDoNotStopANormalClient) {
  namespace asio = boost::asio;
  using asio::ip::tcp;
  using Clock = std::chrono::steady_clock;
  asio::io_context io;
  const tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port_);
  std::vector<tcp::socket> slow;
  for (int i = 0; i < 20; ++i) {
    slow.emplace_back(io);
    slow.back().connect(ep);
    asio::write(slow.back(), asio::buffer(std::string("POST /orders HTTP/1.1\r\nHost: x\r\nX-Slow: ")));
  }
  // Each slow client sends one more byte of its head every 200 ms and never finishes it;
  // meanwhile a normal client is served. The server cuts the slow ones off at its head
  // deadline (10 s), which a write to a closed connection eventually reports.
  const auto t0 = Clock::now();
  std::vector<bool> open(slow.size(), true);
  std::size_t still_open = slow.size();
  int served = 0;
  while (still_open > 0 && Clock::now() - t0 < std::chrono::seconds(25)) {
    for (std::size_t i = 0; i < slow.size(); ++i) {
      boost::system::error_code ec;
      if (open[i] && (asio::write(slow[i], asio::buffer("a", 1), ec), ec)) {
        open[i] = false;
        --still_open;
      }
    }
    Response r = post("/orders", unique("normal"));
    EXPECT_EQ(r.result_int(), 201u) << r.body();
    served += r.result_int() == 201u;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(still_open, 0u) << "slow clients were not cut off";
  EXPECT_GE(served, 20);
}

}  // namespace
}  // namespace idem::e2e
