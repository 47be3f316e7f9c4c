// End to end: the admin listener (docs/admin.md), the control API, metrics and logs.
#include <signal.h>

#include <chrono>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/json.hpp>

#include "e2e/e2e_fixture.h"
#include "gateway/model/request_identity.h"

namespace idem::e2e {
namespace {

TEST_F(GatewayE2E, HeaderHashSubjectScopesRecordsByTheHash) {
  const std::string key = unique("hashed");
  EXPECT_EQ(post("/hashed", key, "{}", {{"Authorization", "Bearer alice"}}).result_int(), 201u);
  const std::string scope = idem::gateway::hash_subject("Bearer alice");
  Response rec = request(admin_, verb::get, "/v1/records/" + scope + "/" + key + "?key_space=hashed");
  EXPECT_EQ(rec.result_int(), 200u) << rec.body();
  EXPECT_EQ(body_json(rec).at("scope").as_string(), scope);
  Response other = post("/hashed", key, "{}", {{"Authorization", "Bearer bob"}});
  EXPECT_EQ(header(other, "Idempotent-Replayed"), "");
}

TEST_F(GatewayE2E, AdminHealthMetricsAndRecords) {
  EXPECT_EQ(request(admin_, verb::get, "/healthz").result_int(), 200u);
  EXPECT_EQ(request(admin_, verb::get, "/readyz").result_int(), 200u);
  const std::string key = unique("rec");
  ASSERT_EQ(post("/orders", key).result_int(), 201u);
  // The record lives in the route's key space: addressed by its stored key, or by the key
  // as the route rendered it with ?key_space.
  Response rec = request(admin_, verb::get, "/v1/records/_/" + key + "?key_space=orders");
  ASSERT_EQ(rec.result_int(), 200u) << rec.body();
  auto o = body_json(rec);
  EXPECT_EQ(o.at("scope").as_string(), "");
  EXPECT_EQ(o.at("key").as_string(), "orders:" + key);
  EXPECT_EQ(request(admin_, verb::get, "/v1/records/_/orders:" + key).body(), rec.body());
  EXPECT_EQ(request(admin_, verb::get, "/v1/records/_/" + key).result_int(), 404u);
  EXPECT_EQ(request(admin_, verb::get, "/v1/records/_/" + key + "?key_space=pay").result_int(), 404u);
  EXPECT_EQ(request(admin_, verb::get, "/v1/records/_/" + key + "?key_space=a%3Ab").result_int(), 400u);
  EXPECT_EQ(request(admin_, verb::get, "/v1/records/_/" + key + "?key_space=").result_int(), 400u);
  EXPECT_EQ(o.at("state").as_string(), "done");
  EXPECT_EQ(o.at("result").as_string(), "response");
  EXPECT_EQ(o.at("response_status").as_int64(), 201);
  EXPECT_TRUE(o.contains("fence"));
  EXPECT_TRUE(o.contains("expires_at"));

  Response metrics = request(admin_, verb::get, "/metrics");
  EXPECT_NE(metrics.body().find("idem_requests_total{route=\"orders\",outcome=\"forwarded\"}"),
            std::string::npos);
  for (const char* name :
       {"idem_tokens_issued_total", "idem_store_errors_total", "idem_store_conflicts_total",
        "idem_store_seconds_bucket", "idem_upstream_seconds_bucket", "idem_inflight"})
    EXPECT_NE(metrics.body().find(name), std::string::npos) << name;

  EXPECT_EQ(request(admin_, verb::delete_, "/v1/records/_/" + key + "?key_space=orders").result_int(), 204u);
  EXPECT_EQ(request(admin_, verb::get, "/v1/records/_/orders:" + key).result_int(), 404u);
  EXPECT_EQ(request(admin_, verb::delete_, "/v1/records/_/orders:" + key).result_int(), 404u);
  // Removed by the operator: the next request runs again.
  EXPECT_EQ(post("/orders", key).result_int(), 201u);
  EXPECT_EQ(executions(key), 2);
}

// Every record of a listing, page by page (each page at most `limit`), with its raw text.
std::vector<json::object> list_pages(unsigned short admin, const std::string& query, std::size_t limit) {
  std::vector<json::object> out;
  std::string cursor;
  for (int pages = 0; pages < 1000; ++pages) {
    Response r = request(admin, verb::get,
                         "/v1/records?" + query + "&limit=" + std::to_string(limit) + "&cursor=" + cursor);
    EXPECT_EQ(r.result_int(), 200u) << r.body();
    auto o = body_json(r);
    const auto& records = o["records"].as_array();
    EXPECT_LE(records.size(), limit);
    for (const auto& rec : records) out.push_back(rec.as_object());
    cursor = std::string(o["next_cursor"].as_string());
    if (cursor.empty()) return out;
  }
  ADD_FAILURE() << "the listing did not end";
  return out;
}

std::multiset<std::string> keys_of(const std::vector<json::object>& records) {
  std::multiset<std::string> out;
  for (const auto& r : records) out.insert(std::string(r.at("key").as_string()));
  return out;
}

TEST_F(GatewayE2E, ListRecordsByKeySpaceStateAndUncertain) {
  const std::string a = unique("list"), b = unique("list"), c = unique("list");
  for (const auto& key : {a, b, c}) ASSERT_EQ(post("/orders", key).result_int(), 201u);
  const std::string lost = unique("list-lost");
  ASSERT_EQ(post("/slow", lost, "{}", {{"X-Test-Delay-Ms", "1500"}}).result_int(), 504u);

  // The records of a key space, rendered exactly as GET /v1/records/{scope}/{key} renders them.
  const auto orders = list_pages(admin_, "key_space=orders", 1000);
  EXPECT_EQ(keys_of(orders).count("orders:" + a), 1u);
  for (const auto& rec : orders) {
    EXPECT_TRUE(std::string(rec.at("key").as_string()).starts_with("orders:")) << rec;
    if (rec.at("key").as_string() == "orders:" + b) {
      EXPECT_EQ(json::serialize(rec), request(admin_, verb::get, "/v1/records/_/orders:" + b).body());
    }
  }
  // Pages of every size visit each record once.
  for (std::size_t limit : {1, 2, 3})
    EXPECT_EQ(keys_of(list_pages(admin_, "key_space=orders", limit)), keys_of(orders));

  // The operator's question: which keys are held as uncertain?
  const auto uncertain = list_pages(admin_, "key_space=slow&uncertain=true", 100);
  EXPECT_EQ(keys_of(uncertain).count("slow:" + lost), 1u);
  for (const auto& rec : uncertain) EXPECT_EQ(rec.at("result").as_string(), "uncertain") << rec;
  // Other tests leave uncertain records in orders too: none of ours is one.
  const auto orders_uncertain = keys_of(list_pages(admin_, "key_space=orders&uncertain=true", 100));
  for (const auto& key : {a, b, c}) EXPECT_EQ(orders_uncertain.count("orders:" + key), 0u) << key;
  for (const auto& rec : list_pages(admin_, "state=pending", 100))
    EXPECT_EQ(rec.at("state").as_string(), "pending") << rec;
  EXPECT_EQ(keys_of(list_pages(admin_, "key_space=orders&state=done&scope=", 1000)), keys_of(orders));
  EXPECT_TRUE(list_pages(admin_, "key_space=orders&scope=nobody", 100).empty());

  // The listed key, with ?key_space, addresses the record: the two agree.
  Response one = request(admin_, verb::get, "/v1/records/_/" + lost + "?key_space=slow");
  EXPECT_EQ(one.result_int(), 200u) << one.body();
  EXPECT_EQ(body_json(one).at("key").as_string(), "slow:" + lost);

  for (const char* bad : {"limit=0", "limit=1001", "limit=x", "state=gone", "uncertain=yes", "key_space=a:b",
                          "key_space=", "cursor=garbage", "state=pending&uncertain=true"}) {
    Response r = request(admin_, verb::get, std::string("/v1/records?") + bad);
    EXPECT_EQ(r.result_int(), 400u) << bad << ": " << r.body();
    EXPECT_EQ(problem_type(r), "urn:idem:problem:request-invalid") << bad;
  }
  EXPECT_EQ(request(admin_, verb::delete_, "/v1/records").result_int(), 405u);
}

TEST_F(GatewayE2E, ControlApiBeginCommitReplay) {
  const std::string key = unique("ctl");
  auto call = [&](const char* path, const std::string& body) {
    return request(admin_, verb::post, path, {{"Content-Type", "application/json"}}, body);
  };
  Response begin = call("/v1/begin", R"({"scope":"s","key":")" + key + R"("})");
  ASSERT_EQ(begin.result_int(), 200u) << begin.body();
  auto b = body_json(begin);
  EXPECT_EQ(b.at("outcome").as_string(), "acquired");
  EXPECT_EQ(b.at("recovered").as_bool(), false);
  const auto fence = b.at("fence").to_number<std::uint64_t>();

  Response busy = call("/v1/begin", R"({"scope":"s","key":")" + key + R"("})");
  EXPECT_EQ(body_json(busy).at("outcome").as_string(), "in_progress");
  Response stale = call("/v1/commit", R"({"scope":"s","key":")" + key + R"(","fence":1,"result":{}})");
  EXPECT_EQ(stale.result_int(), 409u);
  EXPECT_EQ(body_json(stale).at("outcome").as_string(), "fenced");
  Response commit = call("/v1/commit", R"({"scope":"s","key":")" + key + R"(","fence":)" +
                                           std::to_string(fence) + R"(,"result":{"order":42}})");
  EXPECT_EQ(body_json(commit).at("outcome").as_string(), "committed");
  Response replay = call("/v1/begin", R"({"scope":"s","key":")" + key + R"("})");
  auto rp = body_json(replay);
  EXPECT_EQ(rp.at("outcome").as_string(), "replay");
  EXPECT_EQ(json::serialize(rp.at("result")), R"({"order":42})");

  Response rec = request(admin_, verb::get, "/v1/records/s/" + key);
  EXPECT_EQ(body_json(rec).at("result").as_string(), "json");

  Response underscore = call("/v1/begin", R"({"scope":"_","key":")" + key + R"("})");
  EXPECT_EQ(body_json(underscore).at("outcome").as_string(), "acquired");
  Response scoped = request(admin_, verb::get, "/v1/records/%5F/" + key);
  ASSERT_EQ(scoped.result_int(), 200u);
  EXPECT_EQ(body_json(scoped).at("scope").as_string(), "_");
  EXPECT_EQ(body_json(scoped).at("state").as_string(), "pending");
  EXPECT_TRUE(body_json(scoped).contains("lease_until"));
  EXPECT_EQ(request(admin_, verb::get, "/v1/records/_/" + key).result_int(), 404u);

  Response bad = call("/v1/begin", "{not json");
  EXPECT_EQ(bad.result_int(), 400u);
  EXPECT_EQ(problem_type(bad), "urn:idem:problem:request-invalid");
  Response missing = call("/v1/commit", R"({"scope":"s"})");
  EXPECT_EQ(problem_type(missing), "urn:idem:problem:request-invalid");

  Response token = call("/v1/tokens", R"({"scope":"s"})");
  const std::string t(body_json(token).at("token").as_string());
  EXPECT_EQ(body_json(call("/v1/tokens/consume", R"({"scope":"s","token":")" + t + R"("})"))
                .at("outcome")
                .as_string(),
            "consumed");
  EXPECT_EQ(body_json(call("/v1/tokens/consume", R"({"scope":"s","token":")" + t + R"("})"))
                .at("outcome")
                .as_string(),
            "invalid");
  EXPECT_EQ(body_json(call("/v1/tokens/restore", R"({"scope":"s","token":")" + t + R"("})"))
                .at("outcome")
                .as_string(),
            "restored");
  EXPECT_EQ(
      body_json(call("/v1/tokens/restore", R"({"scope":"x","token":"nope"})")).at("outcome").as_string(),
      "invalid");

  Response lock = call("/v1/locks/acquire", R"({"name":")" + key + R"(","owner":"a","ttl_ms":5000})");
  EXPECT_EQ(body_json(lock).at("outcome").as_string(), "locked");
  Response other = call("/v1/locks/release", R"({"name":")" + key + R"(","owner":"b"})");
  EXPECT_EQ(other.result_int(), 409u);
  EXPECT_EQ(body_json(other).at("outcome").as_string(), "not_owner");
}

// A caller whose begin's answer was lost never learned the fence: it gives the claim back
// by the owner it named, and only that owner can; the key is then free, not recovered.
TEST_F(GatewayE2E, ControlApiAbandonGivesBackAClaimByItsOwner) {
  const std::string key = unique("abandon");
  auto call = [&](const char* path, const std::string& body) {
    return request(admin_, verb::post, path, {{"Content-Type", "application/json"}}, body);
  };
  const std::string id = R"("scope":"s","key":")" + key + R"(")";
  Response begin = call("/v1/begin", "{" + id + R"(,"owner":"worker-1"})");
  ASSERT_EQ(body_json(begin).at("outcome").as_string(), "acquired") << begin.body();
  const auto fence = body_json(begin).at("fence").to_number<std::uint64_t>();

  Response other = call("/v1/abandon", "{" + id + R"(,"owner":"worker-2"})");
  EXPECT_EQ(other.result_int(), 409u);
  EXPECT_EQ(body_json(other).at("outcome").as_string(), "fenced");
  EXPECT_EQ(body_json(call("/v1/begin", "{" + id + "}")).at("outcome").as_string(), "in_progress");

  Response mine = call("/v1/abandon", "{" + id + R"(,"owner":"worker-1"})");
  EXPECT_EQ(mine.result_int(), 200u) << mine.body();
  EXPECT_EQ(body_json(mine).at("outcome").as_string(), "released");
  EXPECT_EQ(request(admin_, verb::get, "/v1/records/s/" + key).result_int(), 404u);
  auto again = body_json(call("/v1/begin", "{" + id + R"(,"owner":"worker-3"})"));
  EXPECT_EQ(again.at("outcome").as_string(), "acquired");
  EXPECT_FALSE(again.at("recovered").as_bool());
  EXPECT_GT(again.at("fence").to_number<std::uint64_t>(), fence);
  // Done, it is no longer anyone's to give back; an owner is required.
  ASSERT_EQ(body_json(call("/v1/commit", "{" + id + R"(,"fence":)" +
                                             std::to_string(again.at("fence").to_number<std::uint64_t>()) +
                                             R"(,"result":1})"))
                .at("outcome")
                .as_string(),
            "committed");
  EXPECT_EQ(call("/v1/abandon", "{" + id + R"(,"owner":"worker-3"})").result_int(), 409u);
  for (const std::string& bad : {"{" + id + "}", "{" + id + R"(,"owner":""})", "{" + id + R"(,"owner":7})"}) {
    Response r = call("/v1/abandon", bad);
    EXPECT_EQ(r.result_int(), 400u) << bad;
    EXPECT_EQ(problem_type(r), "urn:idem:problem:request-invalid") << bad;
  }
}

// Without admin.token_env (this fixture) the admin listener serves this machine only: no
// web page can reach it, neither cross-site nor through a host name rebound to 127.0.0.1.
TEST_F(GatewayE2E, AdminWithoutATokenRefusesBrowsersAndForeignHosts) {
  const std::string key = unique("browser");
  const std::string begin = R"({"scope":"s","key":")" + key + R"("})";
  Response cross_site =
      request(admin_, verb::post, "/v1/begin",
              {{"Origin", "http://evil.example"}, {"Content-Type", "application/json"}}, begin);
  EXPECT_EQ(cross_site.result_int(), 403u) << cross_site.body();
  EXPECT_EQ(problem_type(cross_site), "urn:idem:problem:forbidden");
  Response rebound = request(admin_, verb::post, "/v1/begin",
                             {{"Host", "evil.example"}, {"Content-Type", "application/json"}}, begin);
  EXPECT_EQ(rebound.result_int(), 403u) << rebound.body();
  EXPECT_EQ(problem_type(rebound), "urn:idem:problem:forbidden");
  EXPECT_EQ(request(admin_, verb::get, "/v1/records/s/" + key).result_int(), 404u);  // nothing was claimed

  const std::string port = std::to_string(admin_);
  for (const char* path : {"/healthz", "/readyz", "/metrics", "/v1/records/s/x"}) {
    EXPECT_EQ(request(admin_, verb::get, path, {{"Host", "evil.example:" + port}}).result_int(), 403u)
        << path;
    EXPECT_EQ(request(admin_, verb::get, path, {{"Origin", "http://localhost:" + port}}).result_int(), 403u)
        << path;
  }
  for (const std::string& host : std::vector<std::string>{"localhost:" + port, "LOCALHOST", "127.0.0.1",
                                                          "127.0.0.1:" + port, "[::1]", "[::1]:" + port}) {
    EXPECT_EQ(request(admin_, verb::get, "/metrics", {{"Host", host}}).result_int(), 200u) << host;
    EXPECT_EQ(request(admin_, verb::get, "/v1/records/s/" + key, {{"Host", host}}).result_int(), 404u)
        << host;
  }
  for (const char* host : {"app.localhost", "127.0.0.1.nip.io", "localhost:" /* empty port */, "0.0.0.0"})
    EXPECT_EQ(request(admin_, verb::get, "/healthz", {{"Host", host}}).result_int(), 403u) << host;
}

// A cross-site form can POST text/plain: without the 415 a web page could claim any key
// for a hundred years.
TEST_F(GatewayE2E, ControlApiTakesOnlyJsonBodies) {
  const std::string key = unique("form");
  const std::string century = R"({"scope":"s","key":")" + key + R"(","lease_ms":3153600000000})";
  for (const Headers& h :
       {Headers{{"Content-Type", "text/plain"}}, Headers{{"Content-Type", "text/plain; charset=utf-8"}},
        Headers{{"Content-Type", "application/x-www-form-urlencoded"}}, Headers{}}) {
    Response r = request(admin_, verb::post, "/v1/begin", h, century);
    EXPECT_EQ(r.result_int(), 415u) << r.body();
    EXPECT_EQ(problem_type(r), "urn:idem:problem:unsupported-media-type");
  }
  EXPECT_EQ(request(admin_, verb::get, "/v1/records/s/" + key).result_int(), 404u);  // no record was created

  // JSON with a charset passes, and the lease is capped at the longest config duration.
  const Headers json = {{"Content-Type", "Application/JSON; charset=utf-8"}};
  Response too_long = request(admin_, verb::post, "/v1/begin", json, century);
  EXPECT_EQ(too_long.result_int(), 400u) << too_long.body();
  EXPECT_EQ(problem_type(too_long), "urn:idem:problem:request-invalid");
  for (const char* field : {"retention_ms", "lease_ms"}) {
    Response r = request(admin_, verb::post, "/v1/begin", json,
                         R"({"scope":"s","key":")" + key + "\",\"" + field + "\":315360000001}");
    EXPECT_EQ(r.result_int(), 400u) << field << ": " << r.body();
  }
  Response ttl = request(admin_, verb::post, "/v1/tokens", json, R"({"scope":"s","ttl_ms":315360000001})");
  EXPECT_EQ(ttl.result_int(), 400u) << ttl.body();
  EXPECT_EQ(request(admin_, verb::get, "/v1/records/s/" + key).result_int(), 404u);
  Response ok = request(admin_, verb::post, "/v1/begin", json,
                        R"({"scope":"s","key":")" + key + R"(","lease_ms":315360000000})");
  EXPECT_EQ(ok.result_int(), 200u) << ok.body();
  EXPECT_EQ(body_json(ok).at("outcome").as_string(), "acquired");
}

TEST_F(GatewayE2E, OutcomesAreCountedAndLoggedWithoutTheRawKey) {
  const std::string key = unique("logged-secret");
  std::thread first([&] { post("/orders", key, "{}", {{"X-Test-Delay-Ms", "400"}}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  Response waited = post("/orders", key);
  first.join();
  EXPECT_EQ(header(waited, "Idempotent-Replayed"), "true");
  EXPECT_EQ(post("/orders", key, R"({"other":true})").result_int(), 422u);
  Response metrics = request(admin_, verb::get, "/metrics");
  EXPECT_NE(metrics.body().find("route=\"orders\",outcome=\"waited\""), std::string::npos);
  EXPECT_NE(metrics.body().find("route=\"orders\",outcome=\"key_reused\""), std::string::npos);
  // The log is written in batches, at most 100 ms late.
  std::string log;
  for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
       std::chrono::steady_clock::now() < until &&
       log.find("\"outcome\":\"key_reused\"") == std::string::npos;)
    run({"/bin/cat", *dir_ + "/idem.log"}, &log);
  EXPECT_EQ(log.find(key), std::string::npos);
  EXPECT_NE(log.find("\"outcome\":\"waited\""), std::string::npos);
  EXPECT_NE(log.find("\"outcome\":\"key_reused\""), std::string::npos);
  EXPECT_NE(log.find("\"key_hash\""), std::string::npos);
  // Every line of the request log is one JSON object with the same fields.
  std::istringstream lines(log);
  int requests = 0;
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("{\"time\"")) continue;
    boost::system::error_code ec;
    const boost::json::value v = boost::json::parse(line, ec);
    ASSERT_FALSE(ec) << line;
    const auto& o = v.as_object();
    EXPECT_TRUE(o.at("route").is_string()) << line;  // lines of the suite's other tests too
    EXPECT_TRUE(o.at("status").is_int64() || o.at("status").is_uint64()) << line;
    EXPECT_TRUE(o.at("latency_us").is_int64()) << line;
    if (o.contains("key_hash")) {
      EXPECT_EQ(o.at("key_hash").as_string().size(), 12u) << line;
    }
    ++requests;
  }
  EXPECT_GE(requests, 3);
}

}  // namespace
}  // namespace idem::e2e

namespace idem::e2e {
namespace {

// A control-API result comes back as it was committed (docs/control-api.md): numbers no
// double holds (a 19-digit id, 30 digits, 1e400, 0.1 to 34 places) and member order too,
// in the replay, the record and the listing.
TEST_F(GatewayE2E, ControlApiResultsComeBackByteForByte) {
  const std::string key = unique("exact");
  auto call = [&](const char* path, const std::string& body) {
    return request(admin_, verb::post, path, {{"Content-Type", "application/json"}}, body);
  };
  const std::string result =
      R"({"z":1790000000000000001,"a":[123456789012345678901234567890,1e400,-0.1000000000000000055511151231257827],"s":"\u8ba2\u5355"})";
  Response begin = call("/v1/begin", R"({"scope":"exact","key":")" + key + R"("})");
  const auto fence = body_json(begin).at("fence").to_number<std::uint64_t>();
  Response commit = call("/v1/commit", R"({"scope":"exact","key":")" + key + R"(","fence":)" +
                                           std::to_string(fence) + R"(,"result":  )" + result + "  }");
  ASSERT_EQ(commit.result_int(), 200u) << commit.body();
  Response replay = call("/v1/begin", R"({"scope":"exact","key":")" + key + R"("})");
  EXPECT_EQ(replay.body(), R"({"outcome":"replay","result":)" + result + "}");
  Response rec = request(admin_, verb::get, "/v1/records/exact/" + key);
  EXPECT_NE(rec.body().find(R"("value":)" + result + "}"), std::string::npos) << rec.body();
  EXPECT_NO_THROW(json::parse(rec.body()));
  Response list = request(admin_, verb::get, "/v1/records?scope=exact");
  EXPECT_NE(list.body().find(R"("value":)" + result), std::string::npos) << list.body();
  EXPECT_NO_THROW(json::parse(list.body())) << list.body();

  // A body that repeats a member is refused: which of the two would be the result?
  Response again = call("/v1/begin", R"({"scope":"exact","key":")" + key + R"(-2"})");
  const auto fence2 = body_json(again).at("fence").to_number<std::uint64_t>();
  Response twice = call("/v1/commit", R"({"scope":"exact","key":")" + key + R"(-2","fence":)" +
                                          std::to_string(fence2) + R"(,"result":1,"result":2})");
  EXPECT_EQ(twice.result_int(), 400u) << twice.body();
  EXPECT_EQ(problem_type(twice), "urn:idem:problem:request-invalid");
}

}  // namespace
}  // namespace idem::e2e
