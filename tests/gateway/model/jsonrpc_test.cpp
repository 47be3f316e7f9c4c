// JSON-RPC routes (docs/configuration.md, "JSON-RPC routes"): which calls are protected, the
// fingerprint without `id`, the `id` spliced into a stored answer, the errors the gateway
// answers (the config's checks: config_rules_test.cpp, JsonRpcRoute).
#include "gateway/model/jsonrpc.h"

#include <gtest/gtest.h>

#include "gateway/model/config/config.h"
#include "gateway/model/request_identity.h"
#include "gateway/model/test_request.h"

namespace idem::gateway {
namespace {

using testing::TestRequest;

JsonRpcCall read(std::string_view body, const JsonRpcRule& rule = {}) {
  Result<ExactJson> doc = parse_exact_json(body);
  return read_jsonrpc_call(rule, doc ? &*doc : nullptr, body);
}

TEST(JsonRpcCall, OnlyCallsOfListedMethodsWithAnIdAreProtected) {
  EXPECT_EQ(read(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}})").kind,
            JsonRpcCall::Kind::call);
  EXPECT_EQ(read(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})").kind, JsonRpcCall::Kind::pass);
  EXPECT_EQ(read(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})").kind,
            JsonRpcCall::Kind::pass);
  EXPECT_EQ(read(R"({"jsonrpc":"2.0","method":"tools/call","params":{}})").kind, JsonRpcCall::Kind::pass);
  EXPECT_EQ(read(R"({"jsonrpc":"2.0","id":1,"method":7})").kind, JsonRpcCall::Kind::pass);
  EXPECT_EQ(read("not json").kind, JsonRpcCall::Kind::pass);
  EXPECT_EQ(read("\"tools/call\"").kind, JsonRpcCall::Kind::pass);
  EXPECT_EQ(read(R"([{"jsonrpc":"2.0","id":1,"method":"tools/call"}])").kind, JsonRpcCall::Kind::batch);
  EXPECT_EQ(read("[]").kind, JsonRpcCall::Kind::batch);
  const JsonRpcRule sample{{"sampling/createMessage", "tools/call"}};
  EXPECT_EQ(read(R"({"id":1,"method":"sampling/createMessage"})", sample).kind, JsonRpcCall::Kind::call);
}

TEST(JsonRpcCall, TheIdIsKeptExactlyAsSent) {
  EXPECT_EQ(read(R"({"id": 9007199254740993123 ,"method":"tools/call"})").id, "9007199254740993123");
  EXPECT_EQ(read(R"({"method":"tools/call","id":"a\"b"})").id, R"("a\"b")");
  EXPECT_EQ(read(R"({"method":"tools/call","id":1.50})").id, "1.50");
  EXPECT_EQ(read(R"({"method":"tools/call","id":null})").id, "null");
  // A name with escapes is the same member: protected all the same, its value canonical.
  const JsonRpcCall escaped = read(R"({"method":"tools/call","\u0069d":1.50})");
  EXPECT_EQ(escaped.kind, JsonRpcCall::Kind::call);
  EXPECT_EQ(escaped.id, "1.5");
}

TEST(JsonRpcCall, TheFingerprintCoversMethodAndParamsButNotIdJsonrpcOrMeta) {
  const std::string a =
      read(
          R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"n":1},"_meta":{"progressToken":1}}})")
          .canonical;
  EXPECT_EQ(
      a,
      read(R"({"id":"x","method":"tools/call","params":{"arguments":{"n":1.0},"name":"t","_meta":{"k":2}}})")
          .canonical);
  EXPECT_NE(a, read(R"({"id":1,"method":"tools/call","params":{"name":"t","arguments":{"n":2}}})").canonical);
  EXPECT_NE(a, read(R"({"id":1,"method":"tools/call","params":{"name":"u","arguments":{"n":1}}})").canonical);
  const JsonRpcRule both{{"tools/call", "other"}};
  EXPECT_NE(a,
            read(R"({"id":1,"method":"other","params":{"name":"t","arguments":{"n":1}}})", both).canonical);
}

TEST(JsonRpcId, TopLevelMemberSkipsNestedAndStringIds) {
  const std::string body = R"({"result":{"id":5,"text":"\"id\":6"}, "id" : 12 ,"x":[{"id":1}]})";
  auto at = top_level_member(body, "id");
  ASSERT_TRUE(at);
  EXPECT_EQ(body.substr(at->first, at->second), "12");
  EXPECT_FALSE(top_level_member(R"({"result":{"id":5}})", "id"));
  EXPECT_FALSE(top_level_member("[1]", "id"));
  EXPECT_FALSE(top_level_member(R"({"id":)", "id"));
  EXPECT_FALSE(top_level_member(R"({"a":"unterminated)", "id"));
}

TEST(JsonRpcId, AReplayCarriesTheRetrysIdAndEveryOtherByteOfTheAnswer) {
  const std::string stored = R"({"jsonrpc":"2.0","id":1,"result":{"id":1,"n":1.0}})";
  EXPECT_EQ(with_jsonrpc_id(stored, R"("req-2")"),
            R"({"jsonrpc":"2.0","id":"req-2","result":{"id":1,"n":1.0}})");
  EXPECT_EQ(with_jsonrpc_id(stored, "9007199254740993123"),
            R"({"jsonrpc":"2.0","id":9007199254740993123,"result":{"id":1,"n":1.0}})");
  EXPECT_EQ(with_jsonrpc_id(R"({"result":{},"id":"first"})", "2"), R"({"result":{},"id":2})");
  EXPECT_EQ(with_jsonrpc_id("plain text", "2"), "plain text");
}

TEST(JsonRpcError, TheToolsErrorsAreToldApart) {
  EXPECT_TRUE(is_jsonrpc_error(R"({"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x"}})"));
  EXPECT_FALSE(is_jsonrpc_error(R"({"jsonrpc":"2.0","id":1,"result":{"error":"in the result"}})"));
  EXPECT_FALSE(is_jsonrpc_error("error"));
  EXPECT_EQ(
      jsonrpc_error("7", kJsonRpcGatewayError, "in \"progress\"", R"({"status":409})"),
      R"({"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"in \"progress\"","data":{"status":409}}})");
  EXPECT_EQ(jsonrpc_error("null", kJsonRpcInvalidRequest, "batch"),
            R"({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batch"}})");
}

const Config& config() {
  static const Config c = load_config_text(R"(
routes:
  - name: mcp
    match: {method: POST, path: /mcp}
    mode: jsonrpc
    key: "{json.params._meta.idempotency_key}"
  - name: by-header
    match: {method: POST, path: /mcp-header}
    mode: jsonrpc
    subject: header:X-User
  - name: by-argument
    match: {method: POST, path: /mcp-arg}
    mode: jsonrpc
    jsonrpc_methods: [tools/call, prompts/get]
    key: "ticket:{json.params.arguments.request_id}"
)",
                                           "jsonrpc.yaml");
  return c;
}

// "protect scope|key|id", "unprotected", or "reject <problem> <id>".
std::string decide(std::string target, std::string body,
                   std::vector<std::pair<std::string, std::string>> headers = {}) {
  TestRequest req;
  req.target = std::move(target);
  req.json(std::move(body));
  for (auto& [n, v] : headers) req.header(n, v);
  std::optional<RouteMatch> m = match_route(config().routes, req.method, req.target);
  Decision d = identify_request(*m, req.view());
  switch (d.verdict) {
    case Verdict::protect:
      EXPECT_EQ(d.identity.fingerprint.size(), 16u);
      return "protect " + d.identity.scope + "|" + d.identity.key + "|" + d.identity.jsonrpc_id;
    case Verdict::unprotected:
      return "unprotected";
    case Verdict::reject:
      return "reject " + std::string(problem_name(d.rejection.problem)) + " " + d.identity.jsonrpc_id;
  }
  return "?";
}

TEST(JsonRpcRoute, TheKeyComesFromTheCallOrAHeaderAndOnlyProtectedCallsNeedOne) {
  EXPECT_EQ(
      decide(
          "/mcp",
          R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"idempotency_key":"k-1"}}})"),
      "protect |k-1|3");
  EXPECT_EQ(decide("/mcp", R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{}})"),
            "reject key-missing 3");
  EXPECT_EQ(decide("/mcp", R"({"jsonrpc":"2.0","id":3,"method":"tools/list"})"), "unprotected");
  EXPECT_EQ(decide("/mcp", R"({"jsonrpc":"2.0","method":"notifications/initialized"})"), "unprotected");
  EXPECT_EQ(decide("/mcp", R"([{"jsonrpc":"2.0","id":3,"method":"tools/call"}])"),
            "reject body-invalid null");
  // The subject and the header key are read only for a protected call.
  EXPECT_EQ(decide("/mcp-header", R"({"id":"a","method":"tools/list"})"), "unprotected");
  EXPECT_EQ(decide("/mcp-header", R"({"id":"a","method":"tools/call"})", {{"Idempotency-Key", "h-1"}}),
            "reject subject-missing \"a\"");
  EXPECT_EQ(decide("/mcp-header", R"({"id":"a","method":"tools/call"})", {{"X-User", "u"}}),
            "reject key-missing \"a\"");
  EXPECT_EQ(decide("/mcp-header", R"({"id":"a","method":"tools/call"})",
                   {{"X-User", "u"}, {"Idempotency-Key", "h-1"}}),
            "protect u|h-1|\"a\"");
  EXPECT_EQ(
      decide("/mcp-arg", R"({"id":1,"method":"prompts/get","params":{"arguments":{"request_id":"r9"}}})"),
      "protect |ticket:r9|1");
}

TEST(JsonRpcRoute, ARetryWithAnotherIdAndMetaHasTheSameFingerprint) {
  TestRequest a, b;
  a.target = b.target = "/mcp";
  a.json(
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{"idempotency_key":"k","progressToken":1}}})");
  b.json(
      R"({"id":"two","method":"tools/call","jsonrpc":"2.0","params":{"_meta":{"progressToken":9,"idempotency_key":"k"},"name":"t"}})");
  std::optional<RouteMatch> m = match_route(config().routes, "POST", "/mcp");
  EXPECT_EQ(identify_request(*m, a.view()).identity.fingerprint,
            identify_request(*m, b.view()).identity.fingerprint);
}

}  // namespace
}  // namespace idem::gateway
