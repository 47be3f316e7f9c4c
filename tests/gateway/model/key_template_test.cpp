// Key templates: parsing, every source and every rendering rule of docs/gateway.md
#include "gateway/model/key_template.h"

#include <gtest/gtest.h>

#include "gateway/model/test_request.h"

namespace idem::gateway {
namespace {

using testing::TestRequest;

KeyTemplate tmpl(std::string_view text) {
  Result<KeyTemplate> t = KeyTemplate::parse(text);
  EXPECT_TRUE(t.is_ok()) << text << ": " << t.status().message();
  return t ? *t : KeyTemplate();
}

std::string parse_error(std::string_view text) {
  Result<KeyTemplate> t = KeyTemplate::parse(text);
  return t ? "no error" : t.status().message();
}

// The rendered key, or the problem's name.
std::string render(std::string_view text, TestRequest& req, const PathParams& params = {},
                   std::string subject = "") {
  RequestContext ctx(req.view(), params, std::move(subject));
  ProblemOr<std::string> key = render_key(tmpl(text), ctx);
  return key ? *key : "<" + std::string(problem_name(key.problem())) + ">";
}

std::string render_json(std::string_view text, std::string body) {
  TestRequest req;
  req.json(std::move(body));
  return render(text, req);
}

TEST(KeyTemplateParse, Parts) {
  KeyTemplate t = tmpl("pay:{json.a.b}-{header.X-Id}{query.q}/{path.p}/{form.f}/{subject}");
  ASSERT_EQ(t.parts().size(), 11u);
  EXPECT_TRUE(t.parts()[0].literal);
  EXPECT_EQ(t.parts()[0].text, "pay:");
  EXPECT_EQ(t.parts()[1].source, KeyTemplate::Source::json);
  EXPECT_EQ(t.parts()[1].json_path, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(t.parts()[1].text, "{json.a.b}");
  EXPECT_EQ(t.parts()[3].source, KeyTemplate::Source::header);
  EXPECT_EQ(t.parts()[3].name, "X-Id");
  EXPECT_EQ(t.parts()[4].source, KeyTemplate::Source::query);
  EXPECT_EQ(t.parts()[6].source, KeyTemplate::Source::path);
  EXPECT_EQ(t.parts()[8].source, KeyTemplate::Source::form);
  EXPECT_EQ(t.parts()[10].source, KeyTemplate::Source::subject);
  EXPECT_TRUE(t.has_placeholders());
  EXPECT_TRUE(t.uses(KeyTemplate::Source::form));
  EXPECT_FALSE(tmpl("constant").has_placeholders());
  EXPECT_FALSE(tmpl("{json.a}").uses(KeyTemplate::Source::header));
  EXPECT_EQ(tmpl("pay:{json.x}").text(), "pay:{json.x}");
}

TEST(KeyTemplateParse, Errors) {
  EXPECT_EQ(parse_error("a{json.x"), "'{' at position 2 is not closed");
  EXPECT_EQ(parse_error("{json.{x}}"), "'{' at position 1 is not closed");
  EXPECT_EQ(parse_error("a}b"), "'}' at position 2 has no '{'");
  EXPECT_EQ(parse_error("{}"),
            "unknown placeholder {} (expected json.*, header.*, query.*, path.*, form.* or subject)");
  EXPECT_EQ(parse_error("{body}"),
            "unknown placeholder {body} (expected json.*, header.*, query.*, path.*, form.* or subject): did "
            "you mean {json.NAME}?");
  EXPECT_EQ(
      parse_error("{JSON.a}"),
      "unknown placeholder {JSON.a} (expected json.*, header.*, query.*, path.*, form.* or subject): did "
      "you mean {json.a}?");
  EXPECT_EQ(
      parse_error("{subject.x}"),
      "unknown placeholder {subject.x} (expected json.*, header.*, query.*, path.*, form.* or subject): "
      "did you mean {subject}?");
  // Silent no-ops caught with the likely intended spelling (docs/configuration.md, "Key
  // templates").
  EXPECT_EQ(
      parse_error("{jsn.x}"),
      "unknown placeholder {jsn.x} (expected json.*, header.*, query.*, path.*, form.* or subject): did "
      "you mean {json.x}?");
  EXPECT_EQ(parse_error("{headers.X-Id}"),
            "unknown placeholder {headers.X-Id} (expected json.*, header.*, query.*, path.*, form.* or "
            "subject): did you mean {header.X-Id}?");
  EXPECT_EQ(parse_error("{xyzzy.a}"),
            "unknown placeholder {xyzzy.a} (expected json.*, header.*, query.*, path.*, form.* or subject)");
  EXPECT_EQ(parse_error("{header.}"), "{header.} needs a name: {header.NAME}");
  EXPECT_EQ(
      parse_error("sku:{json.items[0].sku}"),
      "{json.items[0].sku} never renders: array elements are fields by index, and the path starts after "
      "json.: did you mean {json.items.0.sku}?");
  EXPECT_EQ(parse_error("{json.items[0].sku?}").substr(parse_error("{json.items[0].sku?}").find("did you")),
            "did you mean {json.items.0.sku?}?");  // optional stays optional
  EXPECT_EQ(parse_error("{jsn.x?}").substr(parse_error("{jsn.x?}").find("did you")),
            "did you mean {json.x?}?");
  EXPECT_EQ(parse_error("{json.$.order.id}"),
            "{json.$.order.id} never renders: array elements are fields by index, and the path starts after "
            "json.: did you mean {json.order.id}?");
  EXPECT_EQ(parse_error("{json.a[1][2]}").substr(parse_error("{json.a[1][2]}").find("did you")),
            "did you mean {json.a.1.2}?");
  EXPECT_EQ(parse_error("{json['a'].b}").substr(parse_error("{json['a'].b}").find("did you")),
            "did you mean {json.a.b}?");
  EXPECT_EQ(parse_error("{json}"), "{json} needs a name: {json.NAME}");
  EXPECT_EQ(parse_error("{json.}"), "{json.} needs a name: {json.NAME}");
  EXPECT_EQ(parse_error("{json.a..b}"), "{json.a..b} has an empty field name");
  EXPECT_EQ(parse_error("{json.a.}"), "{json.a.} has an empty field name");
  EXPECT_EQ(parse_error("{header.Bad Name}"), "{header.Bad Name}: not a valid header name");
  EXPECT_EQ(parse_error("{path.a-b}"), "{path.a-b}: path parameter names are letters, digits and '_'");
  EXPECT_EQ(parse_error("{ json.a }"),
            "unknown placeholder { json.a } (expected json.*, header.*, query.*, path.*, form.* or subject): "
            "did you mean {json.a}?");
  EXPECT_EQ(parse_error("{query.a b}"), "no error");  // query and form names are decoded text
}

TEST(RenderKey, JsonStringsNumbersBooleans) {
  EXPECT_EQ(render_json("pay:{json.id}", R"({"id": "T-100"})"), "pay:T-100");
  EXPECT_EQ(render_json("{json.n}", R"({"n": 1})"), "1");
  EXPECT_EQ(render_json("{json.n}", R"({"n": 1.0})"), "1");
  EXPECT_EQ(render_json("{json.n}", R"({"n": 1e0})"), "1");
  EXPECT_EQ(render_json("{json.n}", R"({"n": -0.0})"), "0");
  EXPECT_EQ(render_json("{json.n}", R"({"n": 0.3})"), "0.3");
  EXPECT_EQ(render_json("{json.n}", R"({"n": 1e21})"), "1e21");
  EXPECT_EQ(render_json("{json.n}", R"({"n": 1e20})"), "100000000000000000000");
  EXPECT_EQ(render_json("{json.n}", R"({"n": 1.5e-7})"), "1.5e-7");
  EXPECT_EQ(render_json("{json.n}", R"({"n": 9007199254740993})"), "9007199254740993");
  EXPECT_EQ(render_json("{json.n}", R"({"n": 10e-1})"), "1");
  EXPECT_EQ(render_json("{json.n}", R"({"n": -0})"), "0");
  EXPECT_EQ(render_json("{json.n}", R"({"n": 1e999999999})"), "1e999999999");
  EXPECT_EQ(render_json("{json.n}", R"({"n": -1.5e-999999999})"), "-1.5e-999999999");
  EXPECT_EQ(render_json("{json.n}", R"({"n": 0.30000000000000004})"), "0.30000000000000004");
  EXPECT_EQ(render_json("{json.t}-{json.f}", R"({"t": true, "f": false})"), "true-false");
}

// Snowflake ids as Jackson writes a Java Long: two payments, two keys.
TEST(RenderKey, LargeIntegersKeepEveryDigit) {
  EXPECT_EQ(render_json("pay:{json.out_trade_no}", R"({"out_trade_no": 1790000000000000001})"),
            "pay:1790000000000000001");
  EXPECT_EQ(render_json("pay:{json.out_trade_no}", R"({"out_trade_no": 1790000000000000002})"),
            "pay:1790000000000000002");
}

TEST(RenderKey, NestedObjectsAndArrays) {
  const std::string body = R"({"order": {"items": [{"sku": "A"}, {"sku": "B", "qty": [5, 6]}]}})";
  EXPECT_EQ(render_json("{json.order.items.0.sku}", body), "A");
  EXPECT_EQ(render_json("{json.order.items.1.sku}", body), "B");
  EXPECT_EQ(render_json("{json.order.items.1.qty.1}", body), "6");
  EXPECT_EQ(render_json("{json.order.items.2.sku}", body), "<key-missing>");   // out of range
  EXPECT_EQ(render_json("{json.order.items.01.sku}", body), "<key-missing>");  // not an index
  EXPECT_EQ(render_json("{json.order.items.-1.sku}", body), "<key-missing>");
  EXPECT_EQ(render_json("{json.order.items.x}", body), "<key-missing>");
  EXPECT_EQ(render_json("{json.order.items.0.sku.deeper}", body), "<key-missing>");  // into a string
  EXPECT_EQ(render_json("{json.0}", R"(["top"])"), "top");             // the body itself may be an array
  EXPECT_EQ(render_json("{json.0}", R"({"0": "member"})"), "member");  // digits name a member of an object
}

TEST(RenderKey, AbsentValues) {
  EXPECT_EQ(render_json("{json.id}", R"({"other": 1})"), "<key-missing>");
  EXPECT_EQ(render_json("{json.id}", R"({"id": null})"), "<key-missing>");
  EXPECT_EQ(render_json("{json.id}", R"({"id": ""})"), "<key-missing>");
  EXPECT_EQ(render_json("a-{json.id}", R"({"id": ""})"), "<key-missing>");
  EXPECT_EQ(render_json("{json.id}", R"("just a string")"), "<key-missing>");
}

TEST(RenderKey, ObjectsAndArraysAreInvalid) {
  EXPECT_EQ(render_json("{json.id}", R"({"id": {"a": 1}})"), "<key-invalid>");
  EXPECT_EQ(render_json("{json.id}", R"({"id": []})"), "<key-invalid>");
  EXPECT_EQ(render_json("{json.id}", R"({"id": {}})"), "<key-invalid>");
}

TEST(RenderKey, FirstProblemFromTheLeft) {
  EXPECT_EQ(render_json("{json.missing}{json.obj}", R"({"obj": {}})"), "<key-missing>");
  EXPECT_EQ(render_json("{json.obj}{json.missing}", R"({"obj": {}})"), "<key-invalid>");
}

TEST(RenderKey, BodyNotJson) {
  for (std::string body :
       {"", "not json", "{\"a\": 1", "{\"a\": 1, \"a\": 2}", "1e99999999999999999999", "{} {}"}) {
    EXPECT_EQ(render_json("{json.a}", body), "<body-invalid>") << body;
  }
  // Only templates that use json.* care.
  TestRequest req;
  req.body = "not json";
  req.header("X-Id", "abc");
  EXPECT_EQ(render("{header.X-Id}", req), "abc");
}

TEST(RenderKey, ValuesArePercentEncoded) {
  EXPECT_EQ(render_json("{json.id}", R"({"id": "has space"})"), "has%20space");
  EXPECT_EQ(render_json("{json.id}", R"({"id": "caf\u00e9"})"), "caf%C3%A9");
  EXPECT_EQ(render_json("{json.id}", R"({"id": "tab\there"})"), "tab%09here");
  EXPECT_EQ(render_json("{json.id}", R"({"id": "A-z_0.9~"})"), "A-z_0.9~");  // unreserved stay
  EXPECT_EQ(render_json("{json.id}", R"({"id": "100%:/?#"})"), "100%25%3A%2F%3F%23");
  // A UTF-8 business key, refused before encoding existed (a platform re-sends for a day).
  EXPECT_EQ(render_json("pay:{json.id}", R"({"id": "订单20240101"})"), "pay:%E8%AE%A2%E5%8D%9520240101");
}

TEST(RenderKey, ValuesCannotForgeASeparator) {
  TestRequest a;
  a.header("X-Tenant", "acme:eu").json(R"({"id": 42})");
  TestRequest b;
  b.header("X-Tenant", "acme").json(R"({"id": "eu:42"})");
  EXPECT_EQ(render("{header.X-Tenant}:{json.id}", a), "acme%3Aeu:42");
  EXPECT_EQ(render("{header.X-Tenant}:{json.id}", b), "acme:eu%3A42");
}

TEST(RenderKey, TheLengthLimitAppliesAfterEncoding) {
  std::string long_id(255, 'k');
  EXPECT_EQ(render_json("{json.id}", R"({"id": ")" + long_id + "\"}"), long_id);
  EXPECT_EQ(render_json("x{json.id}", R"({"id": ")" + long_id + "\"}"), "<key-invalid>");
  std::string spaces(85, ' ');  // 255 characters once encoded
  std::string encoded;
  for (int i = 0; i < 85; ++i) encoded += "%20";
  EXPECT_EQ(render_json("{json.id}", R"({"id": ")" + spaces + "\"}"), encoded);
  EXPECT_EQ(render_json("{json.id}", R"({"id": ")" + spaces + " \"}"), "<key-invalid>");
}

TEST(UnseparatedPlaceholders, NeedACharacterOutsideTheUnreservedSet) {
  EXPECT_EQ(unseparated_placeholders(tmpl("{header.X-Tenant}:{json.id}")), std::nullopt);
  EXPECT_EQ(unseparated_placeholders(tmpl("pay-{json.id}")), std::nullopt);
  EXPECT_EQ(unseparated_placeholders(tmpl("{json.a}-x/y-{json.b}.{json.c}")).value_or(""),
            "{json.b} and {json.c} must be separated by text holding a character other than letters, digits, "
            "'-', '.', '_' and '~' (such as ':'), or two different requests could render the same key");
  EXPECT_NE(unseparated_placeholders(tmpl("{json.a}{json.b}")), std::nullopt);
  EXPECT_NE(unseparated_placeholders(tmpl("{json.a}-{json.b}")), std::nullopt);
  EXPECT_NE(unseparated_placeholders(tmpl("{json.a}a.b_c~{json.b}")), std::nullopt);
}

TEST(RenderKey, Headers) {
  TestRequest req;
  req.header("x-request-id", "r-1").header("X-Empty", "").header("X-Twice", "a").header("x-twice", "b");
  EXPECT_EQ(render("{header.X-Request-Id}", req), "r-1");
  EXPECT_EQ(render("{header.X-REQUEST-ID}", req), "r-1");
  EXPECT_EQ(render("{header.X-Missing}", req), "<key-missing>");
  EXPECT_EQ(render("{header.X-Empty}", req), "<key-missing>");
  // Sent twice: Go's Header.Get and Spring's getHeader read the first, others the last.
  EXPECT_EQ(render("{header.X-Twice}", req), "<request-ambiguous>");
  // An Authorization is read as its service reads it (request_reading_test.cpp).
  req.header("Authorization", "bearer  abc");
  EXPECT_EQ(render("{header.Authorization}", req), "Bearer%20abc");
}

TEST(RenderKey, Query) {
  TestRequest req;
  req.target = "/pay?id=a%2Fb&plus=a+b&empty=&flag&dup=1&dup=2&caf%C3%A9=x&bad=%zz";
  EXPECT_EQ(render("{query.id}", req), "a%2Fb");    // decoded, then encoded again
  EXPECT_EQ(render("{query.plus}", req), "a%20b");  // '+' is a space
  EXPECT_EQ(render("{query.empty}", req), "<key-missing>");
  EXPECT_EQ(render("{query.flag}", req), "<key-missing>");
  EXPECT_EQ(render("{query.dup}", req), "<request-ambiguous>");  // the first, or the last?
  EXPECT_EQ(render("{query.caf\xC3\xA9}", req), "x");
  EXPECT_EQ(render("{query.bad}", req), "%25zz");  // a malformed escape stays as written
  EXPECT_EQ(render("{query.none}", req), "<key-missing>");
  req.target = "/pay";
  EXPECT_EQ(render("{query.id}", req), "<key-missing>");
}

TEST(RenderKey, Form) {
  TestRequest req;
  req.header("Content-Type", "Application/X-WWW-Form-Urlencoded; charset=utf-8");
  req.body = "out_trade_no=T%2D1&note=a+b&empty=&x=%41%42";
  EXPECT_EQ(render("pay:{form.out_trade_no}", req), "pay:T-1");
  EXPECT_EQ(render("{form.x}", req), "AB");
  EXPECT_EQ(render("{form.note}", req), "a%20b");
  EXPECT_EQ(render("{form.empty}", req), "<key-missing>");
  EXPECT_EQ(render("{form.none}", req), "<key-missing>");
  // Not a form body.
  req.headers = {{"Content-Type", "application/json"}};
  EXPECT_EQ(render("{form.x}", req), "<body-invalid>");
  req.headers.clear();
  EXPECT_EQ(render("{form.x}", req), "<body-invalid>");
}

TEST(RenderKey, PathAndSubject) {
  TestRequest req;
  EXPECT_EQ(render("stock:{path.sku}", req, {{"sku", "A-1"}}), "stock:A-1");
  EXPECT_EQ(render("stock:{path.sku}", req, {{"sku", ""}}), "<key-missing>");
  EXPECT_EQ(render("stock:{path.sku}", req, {}), "<key-missing>");
  EXPECT_EQ(render("u:{subject}", req, {}, "user-7"), "u:user-7");
  EXPECT_EQ(render("u:{subject}", req, {}, ""), "<key-missing>");
}

TEST(RenderKey, DetailsNameThePlaceholderNotTheValue) {
  TestRequest req;
  req.json(R"({"id": {"secret": "s3cret"}})");
  PathParams none;
  RequestContext ctx(req.view(), none, "");
  ProblemOr<std::string> key = render_key(tmpl("{json.id}"), ctx);
  ASSERT_FALSE(key.is_ok());
  EXPECT_EQ(key.rejection().detail, "{json.id} is a JSON object, not a key value");
  ProblemOr<std::string> missing = render_key(tmpl("{json.nope}"), ctx);
  EXPECT_EQ(missing.rejection().detail, "{json.nope} is absent from the request");
}

TEST(RequestContext, ParsesTheBodyOnce) {
  TestRequest req;
  req.json(R"({"a": 1})");
  PathParams none;
  RequestContext ctx(req.view(), none, "");
  const ExactJson* first = ctx.json_body();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(ctx.json_body(), first);
  EXPECT_EQ(ctx.json_error(), "");
  req.body = "nope";
  RequestContext bad(req.view(), none, "");
  EXPECT_EQ(bad.json_body(), nullptr);
  EXPECT_NE(bad.json_error().find("not JSON"), std::string::npos) << bad.json_error();
}

}  // namespace
}  // namespace idem::gateway
