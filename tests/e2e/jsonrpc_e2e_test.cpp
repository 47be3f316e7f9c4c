// JSON-RPC routes (docs/configuration.md, "JSON-RPC routes"; docs/recipes/mcp-tool-server.md)
// against the idem binary and the test upstream's POST /mcp, an MCP tool server that counts
// executions per Idempotency-Key and answers with the request's `id`.
#include <future>

#include "e2e/e2e_fixture.h"

namespace idem::e2e {
namespace {

const char* const kRoutes = R"(defaults:
  lease: 5s
  wait: 5s
  upstream_timeout: 3s
routes:
  - name: mcp
    match: { method: POST, path: /mcp }
    mode: jsonrpc
    key: "{json.params._meta.idempotency_key}"
  - name: mcp-nowait
    match: { method: POST, path: /mcp-nowait }
    mode: jsonrpc
    key: "{json.params._meta.idempotency_key}"
    wait: 0s
)";

class JsonRpc : public GatewayE2E {
 protected:
  static void SetUpTestSuite() {
    start([](unsigned short l, unsigned short u, unsigned short a) {
      return config_head(l, u, a, "memory:") + kRoutes;
    });
  }
  // A tools/call of `tool` with `arguments` (JSON), the key in params._meta.
  static std::string call(const std::string& id, const std::string& tool, const std::string& key,
                          const std::string& arguments = "{}", const std::string& progress = "1") {
    return R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":"tools/call","params":{"name":")" + tool +
           R"(","arguments":)" + arguments + R"(,"_meta":{"idempotency_key":")" + key +
           R"(","progressToken":)" + progress + "}}}";
  }
  static Response rpc(const std::string& body, Headers extra = {}, const char* target = "/mcp") {
    extra.emplace_back("Content-Type", "application/json");
    return request(port_, verb::post, target, extra, body);
  }
};

// An agent's retry: a new id and a new progressToken, the same key and arguments. The tool
// runs once; the replay is the first answer byte for byte but for the id, which is the
// retry's (a string, then a 19-digit number that a double would round).
TEST_F(JsonRpc, ARetriedToolCallRunsOnceAndTheReplayCarriesTheRetrysId) {
  const std::string key = unique("ticket");
  Response first = rpc(call("1", "create_ticket", key, R"({"title":"printer on fire"})"));
  ASSERT_EQ(first.result_int(), 200u) << first.body();
  EXPECT_EQ(header(first, "Idempotent-Replayed"), "");
  const std::string answer = first.body();
  ASSERT_NE(answer.find(R"("id":1,)"), std::string::npos) << answer;

  Response retry = rpc(call(R"("retry-2")", "create_ticket", key, R"({"title":"printer on fire"})", "2"));
  EXPECT_EQ(header(retry, "Idempotent-Replayed"), "true");
  std::string expected = answer;
  expected.replace(expected.find(R"("id":1,)"), 7, R"("id":"retry-2",)");
  EXPECT_EQ(retry.body(), expected);

  Response big =
      rpc(call("9007199254740993123", "create_ticket", key, R"({"title":"printer on fire"})", "3"));
  expected = answer;
  expected.replace(expected.find(R"("id":1,)"), 7, R"("id":9007199254740993123,)");
  EXPECT_EQ(big.body(), expected);
  EXPECT_EQ(executions(key), 1);
}

// The same key with other arguments is another request: refused as a JSON-RPC error to the
// new call's id, with the problem in error.data; the tool does not run.
TEST_F(JsonRpc, TheSameKeyWithOtherArgumentsIsAJsonRpcKeyReusedError) {
  const std::string key = unique("reused");
  ASSERT_EQ(rpc(call("1", "create_ticket", key, R"({"title":"a"})")).result_int(), 200u);
  Response other = rpc(call("2", "create_ticket", key, R"({"title":"b"})"));
  EXPECT_EQ(other.result_int(), 200u);
  EXPECT_EQ(header(other, "Content-Type"), "application/json");
  const json::object o = body_json(other);
  EXPECT_EQ(o.at("id").as_int64(), 2);
  EXPECT_EQ(o.at("error").at("code").as_int64(), -32000);
  EXPECT_EQ(o.at("error").at("data").at("type").as_string(), "urn:idem:problem:key-reused");
  EXPECT_EQ(o.at("error").at("data").at("status").as_int64(), 422);
  EXPECT_EQ(executions(key), 1);
}

// tools/list, initialize and notifications are not protected: each reaches the tool server
// and gets its own answer, with no key and nothing replayed.
TEST_F(JsonRpc, OtherMethodsAndNotificationsPassThrough) {
  for (const char* id : {"10", "11"}) {
    Response list = rpc(std::string(R"({"jsonrpc":"2.0","id":)") + id + R"(,"method":"tools/list"})");
    EXPECT_EQ(list.result_int(), 200u);
    EXPECT_EQ(header(list, "Idempotent-Replayed"), "");
    EXPECT_EQ(body_json(list).at("id").as_int64(), std::stoi(id));
    EXPECT_TRUE(body_json(list).at("result").as_object().contains("tools"));
  }
  Response note = rpc(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  EXPECT_EQ(note.result_int(), 202u);
  // A tools/call without the key is refused, as a JSON-RPC error.
  Response keyless = rpc(R"({"jsonrpc":"2.0","id":"k","method":"tools/call","params":{"name":"t"}})");
  EXPECT_EQ(body_json(keyless).at("id").as_string(), "k");
  EXPECT_EQ(body_json(keyless).at("error").at("data").at("type").as_string(), "urn:idem:problem:key-missing");
}

// A batch is refused whole, as JSON-RPC's Invalid Request, and none of its calls runs.
TEST_F(JsonRpc, ABatchIsRefused) {
  const std::string key = unique("batch");
  Response batch = rpc("[" + call("1", "create_ticket", key) + "," + call("2", "create_ticket", key) + "]");
  EXPECT_EQ(batch.result_int(), 200u);
  const json::object o = body_json(batch);
  EXPECT_TRUE(o.at("id").is_null());
  EXPECT_EQ(o.at("error").at("code").as_int64(), -32600);
  EXPECT_EQ(executions(key), 0);
}

// A JSON-RPC error from the tool is passed on and not kept: the agent's retry runs the tool
// again, and that success is what is kept.
TEST_F(JsonRpc, AToolErrorIsNotKept) {
  const std::string key = unique("flaky");
  Response failed = rpc(call("1", "flaky", key));
  EXPECT_EQ(body_json(failed).at("error").at("code").as_int64(), -32603);
  Response retry = rpc(call("2", "flaky", key));
  EXPECT_EQ(header(retry, "Idempotent-Replayed"), "");
  EXPECT_EQ(retry.body().find("\"error\""), std::string::npos) << retry.body();
  EXPECT_EQ(body_json(retry).at("result").at("structuredContent").at("execution").as_int64(), 2);
  Response replay = rpc(call("3", "flaky", key));
  EXPECT_EQ(header(replay, "Idempotent-Replayed"), "true");
  EXPECT_EQ(body_json(replay).at("id").as_int64(), 3);
  EXPECT_EQ(executions(key), 2);
}

// A text/event-stream answer (MCP's streamable HTTP) is passed through and not kept.
TEST_F(JsonRpc, AStreamedAnswerIsNotKept) {
  const std::string key = unique("stream");
  for (int n = 1; n <= 2; ++n) {
    Response r = rpc(call(std::to_string(n), "stream", key));
    EXPECT_EQ(header(r, "Content-Type"), "text/event-stream");
    EXPECT_EQ(header(r, "Idempotent-Replayed"), "");
    EXPECT_NE(r.body().find("(execution " + std::to_string(n) + ")"), std::string::npos) << r.body();
  }
  EXPECT_EQ(executions(key), 2);
}

// An answer in a Content-Encoding cannot carry another id, so it is not kept.
TEST_F(JsonRpc, AnEncodedAnswerIsNotKept) {
  const std::string key = unique("encoded");
  for (int n = 1; n <= 2; ++n) {
    Response r = rpc(call(std::to_string(n), "create_ticket", key), {{"X-Test-Encoding", "gzip"}});
    EXPECT_EQ(header(r, "Content-Encoding"), "gzip");
    EXPECT_EQ(header(r, "Idempotent-Replayed"), "");
  }
  Response plain = rpc(call("3", "create_ticket", key));
  EXPECT_EQ(body_json(plain).at("result").at("structuredContent").at("execution").as_int64(), 3);
  EXPECT_EQ(header(rpc(call("4", "create_ticket", key)), "Idempotent-Replayed"), "true");
  EXPECT_EQ(executions(key), 3);
}

// A duplicate of a call still running is told so as a JSON-RPC error to its own id, marked
// retryable, with Retry-After (the route waits 0s for the first call).
TEST_F(JsonRpc, ACallInProgressIsAJsonRpcError) {
  const std::string key = unique("slow");
  const Headers slow{{"X-Test-Delay-Ms", "500"}};
  auto first = std::async(std::launch::async,
                          [&] { return rpc(call("1", "create_ticket", key), slow, "/mcp-nowait"); });
  ASSERT_TRUE(reached_upstream(key));
  Response duplicate = rpc(call(R"("dup")", "create_ticket", key, "{}", "2"), slow, "/mcp-nowait");
  EXPECT_EQ(duplicate.result_int(), 200u);
  const json::object o = body_json(duplicate);
  EXPECT_EQ(o.at("id").as_string(), "dup");
  EXPECT_EQ(o.at("error").at("code").as_int64(), -32000);
  EXPECT_EQ(o.at("error").at("data").at("type").as_string(), "urn:idem:problem:in-progress");
  EXPECT_TRUE(o.at("error").at("data").at("retryable").as_bool());
  EXPECT_NE(header(duplicate, "Retry-After"), "");
  EXPECT_EQ(body_json(first.get()).at("id").as_int64(), 1);
  EXPECT_EQ(executions(key), 1);
}

}  // namespace
}  // namespace idem::e2e
