// Fingerprints under each rule of docs/gateway.md: body, json, a list of templates, none.
#include "gateway/model/request_fingerprint.h"

#include <gtest/gtest.h>

#include "gateway/model/test_request.h"
#include "idem/fingerprint.h"

namespace idem::gateway {
namespace {

using testing::TestRequest;

FingerprintRule rule(FingerprintRule::Kind kind) { return {kind, {}}; }

FingerprintRule fields(std::initializer_list<std::string_view> templates) {
  FingerprintRule r{FingerprintRule::Kind::fields, {}};
  for (std::string_view t : templates) r.fields.push_back(*KeyTemplate::parse(t));
  return r;
}

// The fingerprint in hex, or the problem's name.
std::string fp(const FingerprintRule& r, TestRequest& req) {
  PathParams none;
  RequestContext ctx(req.view(), none, "");
  ProblemOr<std::string> f = request_fingerprint(r, ctx);
  if (!f) return "<" + std::string(problem_name(f.problem())) + ">";
  return to_hex(*f);
}

TestRequest post(std::string target, std::string body, std::string content_type = "application/json") {
  TestRequest r;
  r.target = std::move(target);
  r.body = std::move(body);
  if (!content_type.empty()) r.header("Content-Type", content_type);
  return r;
}

TEST(BodyFingerprint, CoversMethodTargetContentTypeAndBody) {
  const FingerprintRule body = rule(FingerprintRule::Kind::body);
  TestRequest base = post("/orders?a=1", R"({"a":1})");
  const std::string f = fp(body, base);
  EXPECT_EQ(f.size(), 32u);
  TestRequest same = post("/orders?a=1", R"({"a":1})");
  EXPECT_EQ(fp(body, same), f);

  TestRequest method = post("/orders?a=1", R"({"a":1})");
  method.method = "PUT";
  TestRequest query = post("/orders?a=2", R"({"a":1})");
  TestRequest path = post("/orderz?a=1", R"({"a":1})");
  TestRequest type = post("/orders?a=1", R"({"a":1})", "text/plain");
  TestRequest no_type = post("/orders?a=1", R"({"a":1})", "");
  TestRequest empty_type = post("/orders?a=1", R"({"a":1})");
  empty_type.headers = {{"Content-Type", ""}};
  TestRequest raw = post("/orders?a=1", R"({"a": 1})");  // whitespace counts under body
  for (TestRequest* other : {&method, &query, &path, &type, &no_type, &raw}) EXPECT_NE(fp(body, *other), f);
  EXPECT_NE(fp(body, no_type), fp(body, empty_type));  // absent and empty Content-Type differ
  // Any body is fine under `body`, JSON or not, empty or not.
  TestRequest binary = post("/x", std::string("\0\xFF", 2), "application/octet-stream");
  EXPECT_EQ(fp(body, binary).size(), 32u);
}

TEST(BodyFingerprint, LayoutIsTheStoredFormat) {
  TestRequest req = post("/orders?x=1", "{}");
  Fingerprinter expected;
  expected.add("body").add("POST").add("/orders?x=1").add("application/json").add("{}");
  EXPECT_EQ(fp(rule(FingerprintRule::Kind::body), req), to_hex(expected.finish()));

  Fingerprinter json;
  json.add("json").add("POST").add("/orders?x=1").add("{}");
  EXPECT_EQ(fp(rule(FingerprintRule::Kind::json), req), to_hex(json.finish()));

  TestRequest amount = post("/pay?x=1", R"({"amount": 1.0, "c": "EUR"})");
  Fingerprinter typed;
  typed.add("fields").add("POST").add("/pay").add("1").add("-").add("\"EUR\"").add_absent();
  EXPECT_EQ(fp(fields({"{json.amount}", "-{json.c}", "{json.none}"}), amount), to_hex(typed.finish()));
}

TEST(JsonFingerprint, KeyOrderWhitespaceAndNumberSpellingDoNotMatter) {
  const FingerprintRule json = rule(FingerprintRule::Kind::json);
  TestRequest a = post("/orders", R"({"amount":1,"currency":"EUR","items":[{"sku":"A","qty":2}]})");
  TestRequest b = post("/orders",
                       "{ \"items\" : [ {\"qty\": 2.0, \"sku\": \"A\"} ],\n \"currency\":\"EUR\", "
                       "\"amount\": 1e0 }",
                       "text/plain");  // Content-Type is not part of it
  EXPECT_EQ(fp(json, a), fp(json, b));
  TestRequest c = post("/orders", R"({"amount":2,"currency":"EUR","items":[{"sku":"A","qty":2}]})");
  EXPECT_NE(fp(json, a), fp(json, c));
  TestRequest d = post("/orders", R"({"amount":"1","currency":"EUR","items":[{"sku":"A","qty":2}]})");
  EXPECT_NE(fp(json, a), fp(json, d));
  TestRequest query = post("/orders?v=2", R"({"amount":1,"currency":"EUR","items":[{"sku":"A","qty":2}]})");
  EXPECT_NE(fp(json, a), fp(json, query));  // the query is part of it
  TestRequest method = post("/orders", R"({"amount":1,"currency":"EUR","items":[{"sku":"A","qty":2}]})");
  method.method = "PATCH";
  EXPECT_NE(fp(json, a), fp(json, method));
}

// The Agentic Commerce Protocol's body equivalence (docs/conformance.md, "Agentic Commerce
// Protocol"): a member set to null is not a member left out, at any depth, and arrays keep
// their order (a JSON array is a sequence; only object members are reordered).
TEST(JsonFingerprint, NullIsNotAbsentAndArraysKeepTheirOrder) {
  const FingerprintRule json = rule(FingerprintRule::Kind::json);
  auto f = [&](std::string body) {
    TestRequest r = post("/orders", std::move(body));
    return fp(json, r);
  };
  EXPECT_NE(f(R"({"a":null})"), f(R"({})"));
  EXPECT_NE(f(R"({"a":1,"b":null})"), f(R"({"a":1})"));
  EXPECT_NE(f(R"({"x":{"a":null}})"), f(R"({"x":{}})"));
  EXPECT_NE(f(R"([null])"), f(R"([])"));
  EXPECT_NE(f(R"({"a":null})"), f(R"({"a":"null"})"));
  EXPECT_NE(f(R"({"items":[1,2]})"), f(R"({"items":[2,1]})"));
  EXPECT_NE(f(R"({"items":[{"sku":"A"},{"sku":"B"}]})"), f(R"({"items":[{"sku":"B"},{"sku":"A"}]})"));
  EXPECT_NE(f(R"({"items":[1,2]})"), f(R"({"items":[1,2,2]})"));
  EXPECT_EQ(f(R"({"b":[1,null],"a":null})"), f(R"({"a":null,"b":[1,null]})"));
}

// Numbers keep their exact value: a changed 19-digit id or a changed amount beyond a
// double's precision is a different request.
TEST(JsonFingerprint, NumbersKeepTheirExactValue) {
  const FingerprintRule json = rule(FingerprintRule::Kind::json);
  TestRequest a = post("/pay", R"({"out_trade_no": 1790000000000000001, "amount": 1})");
  TestRequest b = post("/pay", R"({"out_trade_no": 1790000000000000002, "amount": 1})");
  EXPECT_NE(fp(json, a), fp(json, b));
  TestRequest c = post("/pay", R"({"out_trade_no": 1790000000000000001, "amount": 1.0000000000000001})");
  EXPECT_NE(fp(json, a), fp(json, c));
  TestRequest d = post("/pay", R"({"amount": 10e-1, "out_trade_no": 17900000000000000010e-1})");
  EXPECT_EQ(fp(json, a), fp(json, d));
  TestRequest huge = post("/pay", R"({"amount": 1e999999999})");
  TestRequest tiny = post("/pay", R"({"amount": 1e-999999999})");
  EXPECT_EQ(fp(json, huge).size(), 32u);
  EXPECT_NE(fp(json, huge), fp(json, tiny));
}

TEST(JsonFingerprint, BodyMustBeJson) {
  const FingerprintRule json = rule(FingerprintRule::Kind::json);
  for (std::string body : {"", "nope", "{\"a\":1,\"a\":2}", "[1,]"}) {
    TestRequest r = post("/x", body);
    EXPECT_EQ(fp(json, r), "<body-invalid>") << body;
  }
}

TEST(FieldsFingerprint, TypedValues) {
  const FingerprintRule amount = fields({"{json.amount}"});
  auto with = [&](std::string body, std::string target = "/pay") {
    TestRequest r = post(std::move(target), std::move(body));
    return fp(amount, r);
  };
  EXPECT_NE(with(R"({"amount": "1"})"), with(R"({"amount": 1})"));  // "1" and 1 differ
  EXPECT_EQ(with(R"({"amount": 1})"), with(R"({"amount": 1.0})"));  // 1 and 1.0 do not
  EXPECT_EQ(with(R"({"amount": 1})"), with(R"({"amount": 10e-1})"));
  EXPECT_EQ(with(R"({})"), with(R"({"amount": null})"));  // missing and null are both absent
  EXPECT_NE(with(R"({})"), with(R"({"amount": ""})"));    // "" is a value
  EXPECT_NE(with(R"({"amount": ""})"), with(R"({"amount": "null"})"));
  EXPECT_NE(with(R"({"amount": true})"), with(R"({"amount": "true"})"));
  EXPECT_EQ(with(R"({"amount": {"b":1,"a":2}})"), with(R"({"amount": {"a":2,"b":1}})"));
  EXPECT_NE(with(R"({"amount": [1]})"), with(R"({"amount": 1})"));
  // Only the listed values count: other fields and the query do not.
  EXPECT_EQ(with(R"({"amount": 5, "note": "x"})"), with(R"({"amount": 5, "note": "y"})", "/pay?retry=2"));
  EXPECT_NE(with(R"({"amount": 5})"), with(R"({"amount": 5})", "/pay/other"));
  EXPECT_EQ(with("not json"), "<body-invalid>");
}

TEST(FieldsFingerprint, NumbersKeepTheirExactValue) {
  const FingerprintRule listed = fields({"{json.out_trade_no}", "{json.amount}"});
  auto with = [&](std::string body) {
    TestRequest r = post("/pay", std::move(body));
    return fp(listed, r);
  };
  EXPECT_NE(with(R"({"out_trade_no": 1790000000000000001, "amount": 1})"),
            with(R"({"out_trade_no": 1790000000000000002, "amount": 1})"));
  EXPECT_EQ(with(R"({"out_trade_no": 1790000000000000001, "amount": 1})"),
            with(R"({"out_trade_no": 1790000000000000001, "amount": 1e0})"));
  EXPECT_NE(with(R"({"out_trade_no": 1, "amount": 1})"), with(R"({"out_trade_no": "1", "amount": 1})"));
  EXPECT_EQ(with(R"({"out_trade_no": -0, "amount": 1})"), with(R"({"out_trade_no": 0, "amount": 1})"));
}

TEST(FieldsFingerprint, FieldsArePositional) {
  TestRequest r = post("/pay", R"({"a": "x", "b": "y"})");
  EXPECT_NE(fp(fields({"{json.a}", "{json.b}"}), r), fp(fields({"{json.b}", "{json.a}"}), r));
  TestRequest s = post("/pay", R"({"a": "xy", "b": ""})");
  TestRequest t = post("/pay", R"({"a": "x", "b": "y"})");
  EXPECT_NE(fp(fields({"{json.a}", "{json.b}"}), s), fp(fields({"{json.a}", "{json.b}"}), t));
  TestRequest h = post("/pay", "");
  h.header("X-Amount", "1");
  EXPECT_NE(fp(fields({"{header.X-Amount}"}), h), fp(fields({"{header.X-Other}"}), h));
}

// `none` names itself: every request under it matches every other (any method, target,
// body), and none matches a record another rule wrote, so a route whose `fingerprint`
// differs between two gateways answers key-reused rather than replaying another body's
// response (the store matches an empty fingerprint with everything).
TEST(NoneFingerprint, IsOneNonEmptyFingerprintThatNoOtherRuleProduces) {
  const FingerprintRule none = rule(FingerprintRule::Kind::none);
  TestRequest r = post("/x", "not even json");
  TestRequest s = post("/y?q=1", R"({"a": 1})", "");
  s.method = "PUT";
  const std::string f = fp(none, r);
  EXPECT_EQ(f.size(), 32u) << "16 bytes, never the empty fingerprint that matches everything";
  EXPECT_EQ(f, to_hex(none_fingerprint()));
  EXPECT_EQ(f, fp(none, s)) << "two requests under none match";
  for (TestRequest* req : {&r, &s}) {
    for (auto kind : {FingerprintRule::Kind::body, FingerprintRule::Kind::json}) {
      EXPECT_NE(fp(rule(kind), *req), f);
    }
    EXPECT_NE(fp(fields({"{json.a}"}), *req), f);
  }
}

TEST(Fingerprint, RulesNeverCollide) {
  TestRequest r = post("/x", "{}");
  std::string body = fp(rule(FingerprintRule::Kind::body), r);
  std::string json = fp(rule(FingerprintRule::Kind::json), r);
  EXPECT_NE(body, json);
}

}  // namespace
}  // namespace idem::gateway
