// Which answers are kept (docs/http.md, "Answers the service does not want kept";
// docs/configuration.md, "Which answers are kept") and notifications told apart by an
// optional placeholder (docs/recipes/alipay.md, "Refunds"), against the idem binary and the
// test upstream, whose X-Test-Answers makes a service that answers a business failure first
// and a success when run again.
#include <cstdlib>
#include <future>

#include "e2e/e2e_fixture.h"

namespace idem::e2e {
namespace {

const char* const kRoutes = R"(defaults:
  lease: 5s
  wait: 5s
  upstream_timeout: 3s
routes:
  - name: ajax
    match: { method: POST, path: /ajax }
    success_when: { json: code, equals: [0, 200, "0"] }
  - name: flag
    match: { method: POST, path: /flag }
    success_when: { json: data.success, equals: true }
  - name: alipay-notify
    match: { method: POST, path: /alipay/notify }
    key: "alipay:{form.out_trade_no}:{form.out_biz_no?}"
    fingerprint: ["{form.out_trade_no}", "{form.trade_status}", "{form.total_amount}", "{form.refund_fee}"]
    release_on: [400, 401, 403]
    success_when: { text: success }
  - name: plain
    match: { method: POST, path: /plain }
)";

std::string routes_on(unsigned short l, unsigned short u, unsigned short a, const std::string& store) {
  return config_head(l, u, a, store) + kRoutes;
}

class AnswerRules : public GatewayE2E {
 protected:
  static void SetUpTestSuite() {
    start([](unsigned short l, unsigned short u, unsigned short a) { return routes_on(l, u, a, "memory:"); });
  }
  static Response notify(const std::string& form, Headers extra = {}) {
    extra.emplace_back("Content-Type", "application/x-www-form-urlencoded");
    return request(port_, verb::post, "/alipay/notify", extra, form);
  }
};

// RuoYi's AjaxResult: a 200 whose body says the work failed is passed on and not kept; the
// retry runs, and its success is kept and replayed.
TEST_F(AnswerRules, ABusinessFailureInA200IsNotKeptAndTheRetryRuns) {
  const std::string key = unique("ajax");
  const Headers service{
      {"X-Test-Status", "200"},
      {"X-Test-Answers",
       R"({"code":500,"msg":"系统繁忙，请稍后重试"} | {"code":0,"data":1790000000000000001})"}};
  Response first = post("/ajax", key, "{}", service);
  EXPECT_EQ(first.result_int(), 200u);
  EXPECT_EQ(first.body(), R"({"code":500,"msg":"系统繁忙，请稍后重试"})");
  EXPECT_EQ(header(first, "Idempotent-Replayed"), "");
  Response retry = post("/ajax", key, "{}", service);
  EXPECT_EQ(retry.body(), R"({"code":0,"data":1790000000000000001})");
  EXPECT_EQ(header(retry, "Idempotent-Replayed"), "");
  Response again = post("/ajax", key, "{}", service);
  EXPECT_EQ(again.body(), retry.body());
  EXPECT_EQ(header(again, "Idempotent-Replayed"), "true");
  EXPECT_EQ(executions(key), 2);
}

// Success values are compared as JSON values, numbers exactly: 2e2 and 200.0 are 200,
// "0" is the string, 200.0000000000000000001 (200 as a double) is not 200.
TEST_F(AnswerRules, SuccessValuesCompareAsExactJsonValues) {
  for (const char* kept :
       {R"({"code":2e2})", R"({"code":200.0})", R"({"code":"0"})", R"({"msg":"ok","code":0})"}) {
    const std::string key = unique("kept");
    EXPECT_EQ(post("/ajax", key, "{}", {{"X-Test-Answers", kept}}).body(), kept);
    EXPECT_EQ(header(post("/ajax", key, "{}", {{"X-Test-Answers", kept}}), "Idempotent-Replayed"), "true")
        << kept;
    EXPECT_EQ(executions(key), 1) << kept;
  }
  for (const char* released : {R"({"code":200.0000000000000000001})", R"({"code":"200"})", R"({"code":null})",
                               R"({"msg":"no code"})", R"([{"code":0}])", "not json", ""}) {
    const std::string key = unique("released");
    EXPECT_EQ(post("/ajax", key, "{}", {{"X-Test-Answers", released}}).body(), released);
    EXPECT_EQ(header(post("/ajax", key, "{}", {{"X-Test-Answers", released}}), "Idempotent-Replayed"), "")
        << released;
    EXPECT_EQ(executions(key), 2) << released;
  }
  // Only 2xx answers are judged: a 404 is kept whatever its body says.
  const std::string not_found = unique("404");
  EXPECT_EQ(post("/ajax", not_found, "{}", {{"X-Test-Status", "404"}, {"X-Test-Answers", R"({"code":404})"}})
                .result_int(),
            404u);
  EXPECT_EQ(header(post("/ajax", not_found), "Idempotent-Replayed"), "true");
}

// yudao-style {"success":false} under a nested member.
TEST_F(AnswerRules, ANestedBooleanMemberDecides) {
  const std::string key = unique("flag");
  const Headers service{{"X-Test-Answers", R"({"data":{"success":false}} | {"data":{"success":true}})"}};
  EXPECT_EQ(post("/flag", key, "{}", service).body(), R"({"data":{"success":false}})");
  EXPECT_EQ(post("/flag", key, "{}", service).body(), R"({"data":{"success":true}})");
  EXPECT_EQ(header(post("/flag", key, "{}", service), "Idempotent-Replayed"), "true");
  EXPECT_EQ(executions(key), 2);
}

// A duplicate waiting for a request whose answer is then released is not handed that
// answer: it runs the work itself, as after a 5xx.
TEST_F(AnswerRules, ADuplicateWaitingForAReleasedAnswerRunsItself) {
  const std::string key = unique("waiting");
  const Headers service{{"X-Test-Answers", R"({"code":500,"n":1} | {"code":0,"n":2})"},
                        {"X-Test-Delay-Ms", "300"}};
  auto first = std::async(std::launch::async, [&] { return post("/ajax", key, "{}", service); });
  ASSERT_TRUE(reached_upstream(key));
  Response duplicate = post("/ajax", key, "{}", service);
  EXPECT_EQ(first.get().body(), R"({"code":500,"n":1})");
  EXPECT_EQ(duplicate.body(), R"({"code":0,"n":2})");
  EXPECT_EQ(header(duplicate, "Idempotent-Replayed"), "");
  EXPECT_EQ(executions(key), 2);
}

// The service's own say: Idempotency-Release: true releases whatever the status, and the
// field never reaches the client, neither on the answer nor on a replay.
TEST_F(AnswerRules, TheReleaseHeaderReleasesAndIsRemoved) {
  const std::string key = unique("release");
  Response first = post("/plain", key, "{}", {{"X-Test-Release", "true"}});
  EXPECT_EQ(first.result_int(), 201u);
  EXPECT_EQ(header(first, "Idempotency-Release"), "");
  Response retry = post("/plain", key, "{}", {{"X-Test-Release", "false"}});
  EXPECT_EQ(body_json(retry).at("execution").as_int64(), 2);
  EXPECT_EQ(header(retry, "Idempotency-Release"), "");
  Response replay = post("/plain", key, "{}", {{"X-Test-Release", "true"}});
  EXPECT_EQ(header(replay, "Idempotent-Replayed"), "true");
  EXPECT_EQ(header(replay, "Idempotency-Release"), "");
  EXPECT_EQ(executions(key), 2);
  // Nor on a request no route protects.
  Response unrouted = request(port_, verb::post, "/unrouted", {{"X-Test-Release", "true"}}, "{}");
  EXPECT_EQ(unrouted.result_int(), 201u);
  EXPECT_EQ(header(unrouted, "Idempotency-Release"), "");
}

// A forged notify the service answers 400 (release_on) does not block the genuine one; the
// genuine one's `success` is kept and replayed to Alipay's resend; a `fail` is not kept.
TEST_F(AnswerRules, AForgedNotifyAnswered400DoesNotBlockTheGenuineOne) {
  const std::string trade = unique("T");
  const std::string pay = "trade_status=TRADE_SUCCESS&out_trade_no=" + trade + "&total_amount=88.00";
  // The upstream counts executions per key: the forged notify is the first, answered 400.
  const std::string answers = "bad sign | fail | success";
  EXPECT_EQ(
      notify(pay + "&sign=forged", {{"X-Test-Status", "400"}, {"X-Test-Answers", answers}}).result_int(),
      400u);
  const Headers service{{"X-Test-Status", "200"}, {"X-Test-Answers", answers}};
  EXPECT_EQ(notify(pay + "&sign=genuine", service).body(), "fail");
  EXPECT_EQ(notify(pay + "&sign=genuine", service).body(), "success");
  Response resend = notify(pay + "&sign=resent", service);
  EXPECT_EQ(resend.body(), "success");
  EXPECT_EQ(header(resend, "Idempotent-Replayed"), "true");
  EXPECT_EQ(executions("alipay:" + trade + ":"), 3);  // the forged one, fail, success
}

// A partial refund comes to the same notify_url with the payment's out_trade_no and
// trade_status: out_biz_no gives it a key of its own, so it reaches the service.
TEST_F(AnswerRules, APartialRefundNotifyHasAKeyOfItsOwn) {
  const std::string trade = unique("T");
  const std::string pay = "trade_status=TRADE_SUCCESS&out_trade_no=" + trade + "&total_amount=88.00";
  const Headers service{{"X-Test-Status", "200"}, {"X-Test-Answers", "success"}};
  EXPECT_EQ(notify(pay + "&sign=a", service).body(), "success");
  Response refund = notify(pay + "&refund_fee=10.00&out_biz_no=R1&sign=b", service);
  EXPECT_EQ(refund.body(), "success");
  EXPECT_EQ(header(refund, "Idempotent-Replayed"), "");
  EXPECT_EQ(header(notify(pay + "&refund_fee=10.00&out_biz_no=R1&sign=c", service), "Idempotent-Replayed"),
            "true");
  EXPECT_EQ(header(notify(pay + "&refund_fee=5.00&out_biz_no=R2&sign=d", service), "Idempotent-Replayed"),
            "");
  EXPECT_EQ(executions("alipay:" + trade + ":"), 1);
  EXPECT_EQ(executions("alipay:" + trade + ":R1"), 1);
  EXPECT_EQ(executions("alipay:" + trade + ":R2"), 1);
  // The field an optional placeholder reads obeys one reading too: sent twice, refused.
  Response twice = notify(pay + "&refund_fee=1.00&out_biz_no=R3&out_biz_no=R4", service);
  EXPECT_EQ(twice.result_int(), 400u);
  EXPECT_EQ(problem_type(twice), "urn:idem:problem:request-ambiguous");
}

// The same rule on a shared store: the released answer leaves no record behind in Redis.
class AnswerRulesOnRedis : public AnswerRules {
 protected:
  static void SetUpTestSuite() {
    const char* url = std::getenv("IDEM_TEST_REDIS_URL");
    if (url == nullptr) return;
    store_ = std::string(url) + (std::string(url).find('?') == std::string::npos ? "?" : "&") +
             "prefix=answer-rules-" + std::to_string(::getpid()) + ":";
    start([](unsigned short l, unsigned short u, unsigned short a) { return routes_on(l, u, a, store_); });
  }
  static void TearDownTestSuite() {
    if (!store_.empty()) AnswerRules::TearDownTestSuite();
  }
  void SetUp() override {
    if (store_.empty()) GTEST_SKIP() << "IDEM_TEST_REDIS_URL is not set (scripts/services start redis)";
  }
  static inline std::string store_;
};

TEST_F(AnswerRulesOnRedis, ABusinessFailureInA200IsNotKeptAndTheRetryRuns) {
  const std::string key = unique("ajax-redis");
  const Headers service{{"X-Test-Answers", R"({"code":500} | {"code":0})"}};
  EXPECT_EQ(post("/ajax", key, "{}", service).body(), R"({"code":500})");
  EXPECT_EQ(post("/ajax", key, "{}", service).body(), R"({"code":0})");
  EXPECT_EQ(header(post("/ajax", key, "{}", service), "Idempotent-Replayed"), "true");
  EXPECT_EQ(executions(key), 2);
}

}  // namespace
}  // namespace idem::e2e
