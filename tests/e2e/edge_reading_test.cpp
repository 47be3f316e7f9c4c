// One request, one reading (docs/gateway.md, "One request, one reading"): raw requests
// against the real `idem serve` binary that a framework behind it reads as one operation
// while a gateway reading them another way would key them apart (so the operation ran
// under several keys), or reach a protected handler under a spelling the routes did not
// name. Each request is bytes on a socket; each test checks what the client got and
// what reached the upstream (the test upstream records every request it received).
#include <string>
#include <vector>

#include "e2e/e2e_fixture.h"

namespace idem::e2e {
namespace {

// Server-keyed routes (the key comes from the request, not from the client's header),
// a route scoped by a hashed credential, a PUT route whose path also takes POST at the
// service, and a lock on a path parameter that frameworks also route with a `.format`.
std::string reading_config(unsigned short listen, unsigned short upstream, unsigned short admin) {
  return config_head(listen, upstream, admin, "memory:") + R"(defaults:
  upstream_timeout: 5s
routes:
  - name: gift
    match: { method: POST, path: /gift }
    key: "gift:{form.code}"
  - name: coupon
    match: { method: POST, path: /coupon }
    key: "coupon:{query.code}"
  - name: json-order
    match: { method: POST, path: /json-orders }
    key: "order:{json.order_id}"
  - name: header-order
    match: { method: POST, path: /header-orders }
    key: "order:{header.X-Order}"
  - name: tenant
    match: { method: POST, path: /tenant-orders }
    key: "t:{header.X-Tenant}:{json.id}"
  - name: hashed
    match: { method: POST, path: /hashed }
    subject: header-hash:Authorization
  - name: profile
    match: { method: PUT, path: /me }
  - name: deduct
    match: { method: POST, path: "/skus/{sku}/deduct", format_suffix: true }
    key: "stock:{path.sku}"
    mode: lock
  - name: orders
    match: { method: POST, path: /orders }
)";
}

class ReadingTest : public GatewayE2E {
 protected:
  static void SetUpTestSuite() { start(&reading_config); }

  static std::size_t seen_count() {
    return json::parse(request(upstream_->port(), verb::get, "/_seen?from=0").body()).as_array().size();
  }

  // The answer's status line and problem type ("400 urn:idem:problem:key-invalid"), or its
  // status alone; what reached the upstream meanwhile is counted in `reached`.
  struct Exchange {
    std::string answer;
    std::size_t reached = 0;
    std::string status() const { return answer.substr(9, 3); }
    std::string problem() const {
      const auto at = answer.find("urn:idem:problem:");
      return at == std::string::npos ? "" : answer.substr(at, answer.find('"', at) - at);
    }
    bool replayed() const { return answer.find("Idempotent-Replayed: true") != std::string::npos; }
  };
  // Sends `method target` with the fields (each "Name: value", in order) and body, on a
  // connection of its own.
  static Exchange send(const std::string& method, const std::string& target,
                       const std::vector<std::string>& fields, const std::string& body = "") {
    std::string bytes = method + " " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
    for (const std::string& f : fields) bytes += f + "\r\n";
    bytes += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    const std::size_t before = seen_count();
    Exchange e;
    e.answer = raw_exchange(port_, bytes);
    e.reached = seen_count() - before;
    return e;
  }
  static constexpr const char* kForm = "Content-Type: application/x-www-form-urlencoded";
  static constexpr const char* kJson = "Content-Type: application/json";
  static constexpr const char* kAmbiguous = "urn:idem:problem:request-ambiguous";
};

// --- A templated name sent twice -------------------------------------------------------

// `code=RANDOMn&code=GIFT-1`: idem keyed the first value, PHP ($_POST) and Rails act on the
// last, so each request ran GIFT-1 under a key of its own.
TEST_F(ReadingTest, AFormFieldTheKeyReadsSentTwiceIsRefused) {
  for (const std::string& body :
       std::vector<std::string>{"code=" + unique("R") + "&code=GIFT-1", "code=GIFT-1&code=" + unique("R"),
                                "code=GIFT-1&%63ode=" + unique("R"), "code=GIFT-1&code"}) {
    const Exchange e = send("POST", "/gift", {kForm}, body);
    EXPECT_EQ(e.status(), "400") << body << ": " << e.answer;
    EXPECT_EQ(e.problem(), kAmbiguous) << body;
    EXPECT_EQ(e.reached, 0u) << body;
  }
  // Sent once, it keys the request.
  const std::string code = unique("GIFT");
  const Exchange once = send("POST", "/gift", {kForm}, "code=" + code + "&note=a");
  EXPECT_EQ(once.status(), "201") << once.answer;
  EXPECT_EQ(executions("gift:" + code), 1);
}

// The same name in the query and in the form body: Java's getParameter and Rails' params
// read the query's, PHP's $_POST and Laravel's input() the body's.
TEST_F(ReadingTest, AFormFieldAlsoInTheQueryIsRefused) {
  const Exchange form = send("POST", "/gift?code=" + unique("R"), {kForm}, "code=GIFT-2");
  EXPECT_EQ(form.status(), "400") << form.answer;
  EXPECT_EQ(form.problem(), kAmbiguous);
  EXPECT_EQ(form.reached, 0u);
  const Exchange query = send("POST", "/coupon?code=GIFT-2", {kForm}, "code=" + unique("R"));
  EXPECT_EQ(query.status(), "400") << query.answer;
  EXPECT_EQ(query.problem(), kAmbiguous);
  EXPECT_EQ(query.reached, 0u);
}

// `?code=Rn&code=GIFT-3`: the first for idem, the last for PHP and Rails.
TEST_F(ReadingTest, AQueryParameterTheKeyReadsSentTwiceIsRefused) {
  for (const std::string& target : std::vector<std::string>{"/coupon?code=" + unique("R") + "&code=GIFT-3",
                                                            "/coupon?code=GIFT-3&x=1;code=" + unique("R")}) {
    const Exchange e = send("POST", target, {kJson}, "{}");
    EXPECT_EQ(e.status(), "400") << target << ": " << e.answer;
    EXPECT_EQ(e.problem(), kAmbiguous) << target;
    EXPECT_EQ(e.reached, 0u) << target;
  }
  const std::string code = unique("C");
  EXPECT_EQ(send("POST", "/coupon?code=" + code, {kJson}, "{}").status(), "201");
  EXPECT_EQ(executions("coupon:" + code), 1);
}

// --- JSON members in another case ------------------------------------------------------

// `{"order_id":"Xn","ORDER_ID":42}`: Go's encoding/json and ASP.NET Core match members
// case-insensitively (the last wins), so every request ran order 42.
TEST_F(ReadingTest, AJsonMemberDifferingOnlyInCaseFromTheTemplatedOneIsRefused) {
  for (const std::string& body :
       std::vector<std::string>{R"({"order_id":")" + unique("X") + R"(","ORDER_ID":42})",
                                R"({"Order_Id":42,"order_id":"X"})", R"({"ORDER_ID":42})",
                                "{\"order_\xC4\xB1"
                                "d\":1,\"order_id\":\"X\"}"}) {
    const Exchange e = send("POST", "/json-orders", {kJson}, body);
    EXPECT_EQ(e.status(), "400") << body << ": " << e.answer;
    EXPECT_EQ(e.problem(), kAmbiguous) << body;
    EXPECT_EQ(e.reached, 0u) << body;
  }
  const std::string id = unique("O");
  EXPECT_EQ(send("POST", "/json-orders", {kJson}, R"({"order_id":")" + id + R"(","ORDER":1})").status(),
            "201");
  EXPECT_EQ(executions("order:" + id), 1);
}

// --- Headers ---------------------------------------------------------------------------

// Two X-Order lines were joined with ", " (`order:A-1%2C%20A-1`), while Go's Header.Get and
// Spring's getHeader read the first: each request ran A-1 under a key of its own.
TEST_F(ReadingTest, AHeaderTheKeyOrSubjectReadsSentTwiceIsRefused) {
  const std::string order = unique("A");
  for (const std::vector<std::string>& fields : std::vector<std::vector<std::string>>{
           std::vector<std::string>{"X-Order: " + order, "X-Order: " + unique("B")},
           std::vector<std::string>{"X-Order: " + order, "x-order: " + order}}) {
    const Exchange e = send("POST", "/header-orders", fields, "{}");
    EXPECT_EQ(e.status(), "400") << fields[1] << ": " << e.answer;
    EXPECT_EQ(e.problem(), kAmbiguous);
    EXPECT_EQ(e.reached, 0u);
  }
  const Exchange subject = send(
      "POST", "/hashed", {"Authorization: Bearer a", "Authorization: Bearer b", "Idempotency-Key: k"}, "{}");
  EXPECT_EQ(subject.status(), "400") << subject.answer;
  EXPECT_EQ(subject.problem(), kAmbiguous);
  EXPECT_EQ(subject.reached, 0u);
}

// `X-Tenant: rndN` with `Connection: X-Tenant`: idem keyed on the tenant, then stripped the
// field (hop-by-hop) before forwarding, so the service got identical requests.
TEST_F(ReadingTest, AConnectionFieldNamingAFieldTheRouteReadsIsRefused) {
  for (const char* connection : {"Connection: X-Tenant", "Connection: keep-alive, x-tenant"}) {
    const Exchange e =
        send("POST", "/tenant-orders", {"X-Tenant: " + unique("rnd"), connection, kJson}, R"({"id":"T-1"})");
    EXPECT_EQ(e.status(), "400") << connection << ": " << e.answer;
    EXPECT_EQ(e.problem(), kAmbiguous) << connection;
    EXPECT_EQ(e.reached, 0u) << connection;
  }
  // The client's key and the subject are fields the route reads too.
  for (const std::vector<std::string>& fields : std::vector<std::vector<std::string>>{
           std::vector<std::string>{"Idempotency-Key: " + unique("k"), "Connection: Idempotency-Key"},
           std::vector<std::string>{"Idempotency-Key: " + unique("k"), "Authorization: Bearer a",
                                    "Connection: Authorization"}}) {
    const std::string target = fields.size() == 2 ? "/orders" : "/hashed";
    const Exchange e = send("POST", target, fields, "{}");
    EXPECT_EQ(e.status(), "400") << target << ": " << e.answer;
    EXPECT_EQ(e.problem(), kAmbiguous) << target;
    EXPECT_EQ(e.reached, 0u) << target;
  }
}

// `Bearer abc`, `bearer abc`, `Bearer  abc`: one user to the service (the scheme is
// case-insensitive, RFC 9110 §11.1; the whitespace before the credentials is not part of
// them), four subjects to `header-hash:Authorization`, so one key ran four times.
TEST_F(ReadingTest, SpellingsOfOneAuthorizationAreOneSubject) {
  const std::string key = unique("auth");
  const std::string token = unique("abc");
  std::vector<Exchange> answers;
  for (const std::string& auth :
       std::vector<std::string>{"Bearer " + token, "bearer " + token, "Bearer  " + token, "BEARER\t" + token})
    answers.push_back(send("POST", "/hashed", {"Authorization: " + auth, "Idempotency-Key: " + key}, "{}"));
  EXPECT_EQ(answers[0].status(), "201") << answers[0].answer;
  for (std::size_t i = 1; i < answers.size(); ++i) {
    EXPECT_EQ(answers[i].status(), "201") << i << ": " << answers[i].answer;
    EXPECT_TRUE(answers[i].replayed()) << i << ": " << answers[i].answer;
  }
  EXPECT_EQ(executions(key), 1);
  // Basic credentials are one user with or without their base64 padding (Java's decoder
  // takes both): "user:pw" is dXNlcjpwdw==.
  const std::string basic_key = unique("basic");
  EXPECT_EQ(
      send("POST", "/hashed", {"Authorization: Basic dXNlcjpwdw==", "Idempotency-Key: " + basic_key}, "{}")
          .status(),
      "201");
  EXPECT_TRUE(
      send("POST", "/hashed", {"Authorization: basic dXNlcjpwdw", "Idempotency-Key: " + basic_key}, "{}")
          .replayed());
  EXPECT_EQ(executions(basic_key), 1);
}

// --- Spellings of a route ---------------------------------------------------------------

// `POST /me` with a method override reaches the service's `PUT /me` handler (Rack's
// MethodOverride, Express's method-override, Laravel and Symfony, ASP.NET Core; `_method`
// in the query: Spring's HiddenHttpMethodFilter, Laravel, Symfony), which `PUT /me` protects.
TEST_F(ReadingTest, AMethodOverrideTowardAnotherRouteIsRefused) {
  for (const auto& c : std::vector<std::pair<std::string, std::vector<std::string>>>{
           std::pair<std::string, std::vector<std::string>>{"/me", {"X-HTTP-Method-Override: PUT"}},
           {"/me", {"X-Method-Override: PUT"}},
           {"/me", {"X-HTTP-Method: PUT"}},
           {"/me", {"x-http-method-override: put"}},
           {"/me", {"X-HTTP-Method-Override: GET, PUT"}},
           {"/me?_method=PUT", {}},
           {"/me?_method=put", {}},
           {"/ME/?x=1&_method=PUT", {}}}) {
    std::vector<std::string> fields = c.second;
    fields.push_back("Idempotency-Key: " + unique("override"));
    fields.push_back(kJson);
    const Exchange e = send("POST", c.first, fields, "{}");
    const std::string what = c.first + (c.second.empty() ? "" : " " + c.second[0]);
    EXPECT_EQ(e.status(), "400") << what << ": " << e.answer;
    EXPECT_EQ(e.problem(), kAmbiguous) << what;
    EXPECT_EQ(e.reached, 0u) << what;
  }
  // `_method` in a form body (Rack's MethodOverride, the Rails form helpers' hidden field;
  // Spring's HiddenHttpMethodFilter; Laravel): the body is read to look, then refused.
  for (const std::string& body :
       std::vector<std::string>{"_method=PUT", "a=1&_method=put", "a=1;_method=PUT"}) {
    const Exchange e = send("POST", "/me", {kForm}, body);
    EXPECT_EQ(e.status(), "400") << body << ": " << e.answer;
    EXPECT_EQ(e.problem(), kAmbiguous) << body;
    EXPECT_EQ(e.reached, 0u) << body;
  }
  // A form without one is forwarded whole, though it was read first.
  const Exchange form = send("POST", "/me", {kForm}, "a=1&method=PUT");
  EXPECT_EQ(form.status(), "201") << form.answer;
  ASSERT_EQ(form.reached, 1u);
  EXPECT_NE(form.answer.find(R"("body":"a=1&method=PUT")"), std::string::npos) << form.answer;
  // An override toward the route the request matches anyway, or toward no route, changes
  // nothing idem protects: forwarded as without it.
  const std::string key = unique("same");
  EXPECT_EQ(
      send("POST", "/orders", {"X-HTTP-Method-Override: POST", "Idempotency-Key: " + key}, "{}").status(),
      "201");
  EXPECT_EQ(executions(key), 1);
  EXPECT_EQ(send("POST", "/elsewhere?_method=PUT", {}, "{}").reached, 1u);
}

// Rails' implicit `(.:format)` and Spring MVC's suffix pattern (up to 5.2) route
// `POST /skus/A-1/deduct.json` to the deduct handler: with the lock on A-1 held, it ran.
TEST_F(ReadingTest, AFormatSuffixReachesTheRouteThatCoversIt) {
  const std::string sku = unique("SKU");
  Response lock = request(admin_, verb::post, "/v1/locks/acquire", {{"Content-Type", "application/json"}},
                          R"({"name":"deduct:stock:)" + sku + R"(","owner":"ops","ttl_ms":60000})");
  ASSERT_EQ(body_json(lock).at("outcome").as_string(), "locked") << lock.body();
  for (const std::string& target :
       std::vector<std::string>{"/skus/" + sku + "/deduct", "/skus/" + sku + "/deduct.json",
                                "/skus/" + sku + "/deduct.xml/", "/skus/" + sku + "/Deduct.JSON;v=1"}) {
    const Exchange e = send("POST", target, {kJson}, "{}");
    EXPECT_EQ(e.status(), "409") << target << ": " << e.answer;
    EXPECT_EQ(e.problem(), "urn:idem:problem:locked") << target;
    EXPECT_EQ(e.reached, 0u) << target;
  }
}

// --- The key's syntax (RFC 8941, the IETF draft's Idempotency-Key) ---------------------

// `Idempotency-Key: a,b` is a list of two Items to a Structured Fields parser, and `k;p=1`
// an Item with a parameter: idem took each whole as the key.
TEST_F(ReadingTest, AKeyThatIsNotExactlyOneItemIsRefused) {
  for (const std::vector<std::string>& fields : std::vector<std::vector<std::string>>{
           std::vector<std::string>{"Idempotency-Key: " + unique("a") + "," + unique("b")},
           std::vector<std::string>{"Idempotency-Key: " + unique("k") + ";p=1"},
           std::vector<std::string>{"Idempotency-Key: \"" + unique("k") + "\";p=1"},
           std::vector<std::string>{"Idempotency-Key: \"" + unique("a") + "\", \"b\""},
           std::vector<std::string>{"Idempotency-Key: " + unique("a"), "Idempotency-Key: " + unique("b")}}) {
    const Exchange e = send("POST", "/orders", fields, "{}");
    EXPECT_EQ(e.status(), "400") << fields[0] << ": " << e.answer;
    EXPECT_EQ(e.problem(), "urn:idem:problem:key-invalid") << fields[0];
    EXPECT_EQ(e.reached, 0u) << fields[0];
  }
  // Firefox sends its key as an sf-string; a string may hold a comma.
  const Exchange firefox = send("POST", "/orders", {"Idempotency-Key: \"12345678901234567890\""}, "{}");
  EXPECT_EQ(firefox.status(), "201") << firefox.answer;
  EXPECT_EQ(firefox.reached, 1u);
  const std::string comma = unique("x");
  EXPECT_EQ(send("POST", "/orders", {"Idempotency-Key: \"" + comma + ",y\""}, "{}").status(), "201");
  EXPECT_EQ(executions(comma + ",y"), 1);
}

}  // namespace
}  // namespace idem::e2e
