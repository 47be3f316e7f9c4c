// One request, one reading (gateway/model/request_reading.h): each value a key, subject or
// fingerprint reads is read as the service behind the gateway reads it, or refused. Rows
// name the framework whose reading each one keeps in step with.
#include "gateway/model/request_reading.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include "gateway/model/config/config.h"
#include "gateway/model/key_template.h"
#include "gateway/model/request_fingerprint.h"
#include "gateway/model/request_identity.h"
#include "gateway/model/test_request.h"

namespace idem::gateway {
namespace {

using testing::TestRequest;

// "value", "<absent>" or "<problem-name>".
std::string shown(const ProblemOr<std::optional<std::string>>& v) {
  if (!v) return "<" + std::string(problem_name(v.problem())) + ">";
  return *v ? **v : "<absent>";
}

std::string header(std::vector<std::pair<std::string, std::string>> fields, std::string_view name) {
  TestRequest r;
  r.headers = std::move(fields);
  return shown(read_header(r.view().headers, name));
}

TEST(ReadHeader, OneFieldLineOrNone) {
  EXPECT_EQ(header({{"X-Tenant", "acme"}}, "x-tenant"), "acme");
  EXPECT_EQ(header({{"X-Tenant", "a, b"}}, "X-Tenant"), "a, b");  // one line, read whole as Header.Get does
  EXPECT_EQ(header({{"X-Other", "a"}}, "X-Tenant"), "<absent>");
  EXPECT_EQ(header({{"X-Tenant", ""}}, "X-Tenant"), "");
  // Go's Header.Get and Spring's getHeader read the first line, a joined reading both.
  EXPECT_EQ(header({{"X-Tenant", "a"}, {"x-tenant", "b"}}, "X-Tenant"), "<request-ambiguous>");
  EXPECT_EQ(header({{"X-Tenant", "a"}, {"X-Tenant", "a"}}, "X-Tenant"), "<request-ambiguous>");
  EXPECT_EQ(header({{"X-Tenant", "a"}, {"X-Tenant", ""}}, "X-Tenant"), "<request-ambiguous>");
  EXPECT_EQ(header({{"Authorization", "bearer  abc"}}, "authorization"), "Bearer abc");
}

TEST(NormalizeCredentials, TheSchemeInOneSpellingAndOneSpaceBeforeTheCredentials) {
  struct Row {
    const char* value;
    const char* read;
  };
  for (Row r :
       {Row{"Bearer abc", "Bearer abc"},  // the common spelling is unchanged
        {"bearer abc", "Bearer abc"},
        {"BEARER abc", "Bearer abc"},
        {"Bearer  abc", "Bearer abc"},
        {"Bearer\tabc ", "Bearer abc"},
        {"Bearer abc.DEF", "Bearer abc.DEF"},  // credentials keep their case
        {"basic dXNlcjpwdw==", "Basic dXNlcjpwdw=="},
        {"Basic dXNlcjpwdw", "Basic dXNlcjpwdw=="},  // padding as Java's decoder reads it
        {"Basic dXNlcjpwdzE", "Basic dXNlcjpwdzE="},
        {"Basic dXNlcjpw", "Basic dXNlcjpw"},
        {"Basic dXNlcjpwd", "Basic dXNlcjpwd"},  // 4n+1: no base64, left alone
        {"Basic dXNl cjpw", "Basic dXNl cjpw"},
        {"dpop abc", "DPoP abc"},
        {"SCRAM-sha-256 x=1", "SCRAM-SHA-256 x=1"},
        {"Digest username=\"a\",  realm=\"b\"", "Digest username=\"a\",  realm=\"b\""},
        {"AWS4-HMAC-SHA256 Credential=X", "aws4-hmac-sha256 Credential=X"},  // unregistered: lower case
        {"Negotiate", "Negotiate"},
        {"negotiate", "Negotiate"},
        // Without a scheme the value is a credential, case-sensitive as a whole.
        {"AbC123", "AbC123"},
        {"ab=c d", "ab=c d"},
        {"", ""}}) {
    EXPECT_EQ(normalize_credentials(r.value), r.read) << r.value;
  }
}

std::string parameter(const std::string& target, const std::string& body, std::string_view name, bool in_form,
                      const char* type = "application/x-www-form-urlencoded") {
  TestRequest r;
  r.target = target;
  r.body = body;
  if (type) r.header("Content-Type", type);
  return shown(read_parameter(r.view(), name, in_form));
}

TEST(ReadParameter, ANameOnceInTheQueryAndTheFormBodyTogether) {
  // {form.code}
  EXPECT_EQ(parameter("/gift", "code=G-1&x=1", "code", true), "G-1");
  EXPECT_EQ(parameter("/gift", "x=1", "code", true), "<absent>");
  EXPECT_EQ(parameter("/gift", "code=", "code", true), "");
  EXPECT_EQ(parameter("/gift", "code=A&code=G-1", "code", true), "<request-ambiguous>");  // PHP, Rails: last
  EXPECT_EQ(parameter("/gift", "code=A&code", "code", true), "<request-ambiguous>");
  EXPECT_EQ(parameter("/gift", "code=A&%63ode=B", "code", true), "<request-ambiguous>");  // decoded names
  EXPECT_EQ(parameter("/gift?code=A", "code=G-1", "code", true), "<request-ambiguous>");  // Java: the query's
  EXPECT_EQ(parameter("/gift?code=A", "x=1", "code", true), "<request-ambiguous>");       // Java: the query's
  EXPECT_EQ(parameter("/gift?other=A", "code=G-1", "code", true), "G-1");
  // Rack 2 and Python before 3.9.2 split at ';' too.
  EXPECT_EQ(parameter("/gift", "code=A;x=1", "code", true), "<request-ambiguous>");
  EXPECT_EQ(parameter("/gift", "x=1;code=A&code=B", "code", true), "<request-ambiguous>");
  EXPECT_EQ(parameter("/gift", "x=1;code=A", "code", true), "<request-ambiguous>");
  EXPECT_EQ(parameter("/gift", "x=1;y=2&code=A", "code", true), "A");
  EXPECT_EQ(parameter("/gift", "code=A%3Bx", "code", true), "A;x");  // an encoded ';' is the value's
  // Not a form.
  EXPECT_EQ(parameter("/gift", "code=A", "code", true, "application/json"), "<body-invalid>");
  EXPECT_EQ(parameter("/gift", "code=A", "code", true, nullptr), "<body-invalid>");

  // {query.code}
  EXPECT_EQ(parameter("/coupon?code=C-1", "", "code", false, nullptr), "C-1");
  EXPECT_EQ(parameter("/coupon?code=C-1&code=C-2", "", "code", false, nullptr), "<request-ambiguous>");
  EXPECT_EQ(parameter("/coupon?code=C-1", "code=C-2", "code", false),
            "<request-ambiguous>");  // Laravel: body's
  EXPECT_EQ(parameter("/coupon", "code=C-2", "code", false), "<request-ambiguous>");
  // A body that is no form holds no parameters.
  EXPECT_EQ(parameter("/coupon?code=C-1", "code=C-2", "code", false, "application/json"), "C-1");
  EXPECT_EQ(parameter("/coupon", "code=C-2", "code", false, "text/plain"), "<absent>");
}

TEST(ReadParameter, AContentTypeSentTwiceLeavesTheBodyUnread) {
  TestRequest r;
  r.target = "/coupon?code=C-1";
  r.body = "code=C-2";
  r.header("Content-Type", "application/json").header("Content-Type", "application/x-www-form-urlencoded");
  EXPECT_EQ(shown(read_parameter(r.view(), "code", false)), "<request-ambiguous>");
  EXPECT_EQ(shown(read_parameter(r.view(), "code", true)), "<request-ambiguous>");
}

std::string case_variant(const char* json, std::string_view name) {
  const boost::json::value v = boost::json::parse(json);
  return std::string(member_in_another_case(v.as_object(), name).value_or("<none>"));
}

TEST(MemberInAnotherCase, AsGoAndAspNetCoreMatchMemberNames) {
  EXPECT_EQ(case_variant(R"({"order_id": 1})", "order_id"), "<none>");
  EXPECT_EQ(case_variant(R"({"order_id": 1, "ORDER_ID": 2})", "order_id"), "ORDER_ID");
  EXPECT_EQ(case_variant(R"({"Order_Id": 2})", "order_id"), "Order_Id");
  EXPECT_EQ(case_variant(R"({"order_id": 1, "orderid": 2, "order-id": 3})", "order_id"), "<none>");
  // Beyond ASCII, what folds to an ASCII letter: long s (Go, .NET), Kelvin sign (Go),
  // dotless i (.NET).
  EXPECT_EQ(case_variant("{\"\xC5\xBFku\": 1}", "sku"), "\xC5\xBFku");
  EXPECT_EQ(case_variant("{\"s\xE2\x84\xAAu\": 1}", "SKU"), "s\xE2\x84\xAAu");
  EXPECT_EQ(case_variant("{\"order_\xC4\xB1"
                         "d\": 1}",
                         "order_id"),
            "order_\xC4\xB1"
            "d");
  EXPECT_EQ(case_variant("{\"\xC3\xA9t\xC3\xA9\": 1}", "ete"), "<none>");
}

TEST(RenderKey, AJsonMemberInAnotherCaseAtAnyDepthIsRefused) {
  TestRequest r;
  PathParams none;
  auto render = [&](const char* key_template, const char* body) {
    r.json(body);
    RequestContext ctx(r.view(), none, "");
    ProblemOr<std::string> key = render_key(*KeyTemplate::parse(key_template), ctx);
    r.headers.clear();
    return key ? *key : "<" + std::string(problem_name(key.problem())) + ">";
  };
  EXPECT_EQ(render("{json.order.id}", R"({"order": {"id": "A"}})"), "A");
  EXPECT_EQ(render("{json.order.id}", R"({"order": {"id": "A", "ID": "B"}})"), "<request-ambiguous>");
  EXPECT_EQ(render("{json.order.id}", R"({"order": {"id": "A"}, "Order": {"id": "B"}})"),
            "<request-ambiguous>");
  EXPECT_EQ(render("{json.items.0.sku}", R"({"items": [{"sku": "A", "SKU": "B"}]})"), "<request-ambiguous>");
  // Members the template does not read may be in any case.
  EXPECT_EQ(render("{json.order.id}", R"({"order": {"id": "A", "NOTE": 1, "note": 2}})"), "A");
  // Absent as spelled but present in another case: the service reads it, so no reading is safe.
  EXPECT_EQ(render("{json.order_id}", R"({"ORDER_ID": 42})"), "<request-ambiguous>");
}

TEST(RequestFingerprint, TemplatesReadAsKeysDo) {
  FingerprintRule rule;
  rule.kind = FingerprintRule::Kind::fields;
  rule.fields = {*KeyTemplate::parse("{json.amount}"), *KeyTemplate::parse("{header.X-Currency}")};
  TestRequest r;
  r.json(R"({"amount": 1, "AMOUNT": 1000})");
  PathParams none;
  RequestContext json_case(r.view(), none, "");
  EXPECT_EQ(request_fingerprint(rule, json_case).problem(), Problem::request_ambiguous);
  r.json(R"({"amount": 1})").header("X-Currency", "EUR").header("X-Currency", "USD");
  RequestContext twice(r.view(), none, "");
  EXPECT_EQ(request_fingerprint(rule, twice).problem(), Problem::request_ambiguous);
}

const Config& routes() {
  static const Config c = load_config_text(R"(
routes:
  - name: orders
    match: {method: POST, path: /orders}
  - name: tenant
    match: {method: POST, path: /tenant}
    key: "{header.X-Tenant}:{json.id}"
    subject: header-hash:Authorization
    fingerprint: ["{header.X-Amount}"]
  - name: gift
    match: {method: POST, path: /gift}
    key: "gift:{form.code}"
    fingerprint: none
  - name: tokens
    match: {method: POST, path: /forms/*}
    key: token
    fingerprint: json
  - name: lock
    match: {method: POST, path: /lock}
    key: "{json.id}"
    mode: lock
)",
                                           "reading.yaml");
  return c;
}

const Route& route(std::string_view name) {
  for (const Route& r : routes().routes)
    if (r.name == name) return r;
  throw std::logic_error("no route");
}

TEST(RouteReadsHeader, EveryFieldItsKeySubjectAndFingerprintRead) {
  struct Row {
    const char* route;
    const char* field;
    bool read;
  };
  for (Row r : {Row{"orders", "Idempotency-Key", true},
                {"orders", "idempotency-key", true},
                {"orders", "Content-Type", true},  // fingerprint: body
                {"orders", "X-Tenant", false},
                {"orders", "Idempotency-Token", false},
                {"tenant", "X-Tenant", true},
                {"tenant", "authorization", true},
                {"tenant", "X-Amount", true},
                {"tenant", "Idempotency-Key", false},
                {"tenant", "Content-Type", false},
                {"gift", "Content-Type", true},  // {form.*}
                {"tokens", "Idempotency-Token", true},
                {"tokens", "Content-Type", false},  // fingerprint: json
                {"lock", "Content-Type", false}}) {
    EXPECT_EQ(route_reads_header(route(r.route), r.field), r.read) << r.route << " " << r.field;
  }
}

TEST(ConnectionNamesAReadField, RefusedBeforeAnythingIsRead) {
  struct Row {
    const char* route;
    std::vector<std::pair<std::string, std::string>> fields;
    bool refused;
  };
  for (const Row& r : {Row{"tenant", {{"Connection", "X-Tenant"}}, true},
                       Row{"tenant", {{"Connection", "keep-alive, x-tenant"}}, true},
                       Row{"tenant", {{"Connection", "keep-alive"}, {"Connection", " Authorization "}}, true},
                       Row{"tenant", {{"Connection", "keep-alive, close"}}, false},
                       Row{"tenant", {{"Connection", "X-Tenant-Id"}}, false},
                       Row{"orders", {{"Connection", "Idempotency-Key"}}, true},
                       Row{"gift", {{"Connection", "Content-Type"}}, true},
                       Row{"gift", {{"X-Connection", "Content-Type"}}, false}}) {
    TestRequest req;
    req.headers = r.fields;
    std::optional<Rejection> refusal = connection_names_a_read_field(route(r.route), req.view().headers);
    EXPECT_EQ(refusal.has_value(), r.refused) << r.route << " " << r.fields[0].second;
    if (refusal) {
      EXPECT_EQ(refusal->problem, Problem::request_ambiguous);
    }
  }
}

TEST(Identity, ARepeatedSubjectOrAConnectionNamingAReadFieldIsRefusedFirst) {
  auto decide = [](TestRequest& r) {
    std::optional<RouteMatch> m = match_route(routes().routes, r.method, r.target);
    Decision d = identify_request(*m, r.view());
    return d.verdict == Verdict::reject ? std::string(problem_name(d.rejection.problem)) : d.identity.key;
  };
  TestRequest r;
  r.target = "/tenant";
  r.json(R"({"id": "1"})").header("X-Tenant", "acme").header("Authorization", "Bearer a");
  EXPECT_EQ(decide(r), "acme:1");
  r.header("Authorization", "Bearer b");
  EXPECT_EQ(decide(r), "request-ambiguous");
  r.headers = {{"X-Tenant", "acme"}, {"Connection", "x-tenant"}};  // before the subject is missed
  EXPECT_EQ(decide(r), "request-ambiguous");
  // Spellings of one Authorization are one subject.
  const Route& tenant = route("tenant");
  std::vector<std::string> scopes;
  for (const char* auth : {"Bearer abc", "bearer abc", "Bearer  abc", "BEARER\tabc"}) {
    TestRequest a;
    a.header("Authorization", auth);
    scopes.push_back(*subject_of(tenant.policy.subject, a.view().headers));
  }
  EXPECT_EQ(scopes[0], hash_subject("Bearer abc"));  // as before for the usual spelling
  for (const std::string& s : scopes) EXPECT_EQ(s, scopes[0]);
}

}  // namespace
}  // namespace idem::gateway
