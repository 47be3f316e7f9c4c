// Request identity (docs/gateway.md): the order of the cheap checks, the scope, the key from
// each source, required: false, and the problem every rejection gets.
#include "gateway/model/request_identity.h"

#include <gtest/gtest.h>

#include "gateway/model/config/config.h"
#include "gateway/model/test_request.h"
#include "idem/fingerprint.h"

namespace idem::gateway {
namespace {

using testing::TestRequest;

const Config& config() {
  static const Config c = load_config_text(R"(
defaults:
  max_body: 64B
tokens:
  subject: header:X-User-Id
routes:
  - name: orders
    match: {method: POST, path: /orders}
    subject: header:X-Tenant
  - name: optional
    match: {method: POST, path: /optional}
    key: header:X-Request-Id
    required: false
  - name: hashed
    match: {method: POST, path: /hashed}
    subject: header-hash:Authorization
    key: "u:{subject}:{json.id}"
  - name: form
    match: {method: POST, path: /forms/*}
    key: token
  - name: optional-form
    match: {method: POST, path: /maybe-forms/*}
    key: token
    required: false
  - name: pay
    match: {method: POST, path: /pay}
    key: "pay:{json.out_trade_no}"
    fingerprint: json
  - name: optional-pay
    match: {method: POST, path: /optional-pay}
    key: "pay:{json.out_trade_no}"
    required: false
  - name: stock
    match: {method: POST, path: "/skus/{sku}/deduct"}
    key: "stock:{path.sku}"
    mode: lock
  - name: unfingerprinted
    match: {method: POST, path: /nofp}
    fingerprint: none
  - name: pay-notify
    match: {method: POST, path: /pay-notify}
    key: "pay:{json.out_trade_no}"
    key_space: pay
)",
                                           "identity.yaml");
  return c;
}

// "protect scope|key|fp-size", "unprotected", or "reject <problem>".
std::string decide(TestRequest& req) {
  std::optional<RouteMatch> m = match_route(config().routes, req.method, req.target);
  if (!m) return "unmatched";
  Decision d = identify_request(*m, req.view());
  switch (d.verdict) {
    case Verdict::protect:
      return "protect " + d.identity.scope + "|" + d.identity.key + "|" +
             std::to_string(d.identity.fingerprint.size());
    case Verdict::unprotected:
      return "unprotected";
    case Verdict::reject:
      EXPECT_FALSE(d.rejection.detail.empty());
      return "reject " + std::string(problem_name(d.rejection.problem));
  }
  return "?";
}

TestRequest post(std::string target, std::string body = "") {
  TestRequest r;
  r.target = std::move(target);
  r.body = std::move(body);
  return r;
}

std::string decide_post(std::string target, std::string body) {
  TestRequest r = post(std::move(target), std::move(body));
  return decide(r);
}

TEST(HashSubject, Sha256Hex) {
  EXPECT_EQ(hash_subject("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hash_subject(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hash_subject("Bearer alice"), hash_subject("Bearer alice"));
  EXPECT_NE(hash_subject("Bearer alice"), hash_subject("Bearer bob"));
}

// The request log's key_hash: HMAC-SHA256 (RFC 2104) of scope "\n" key, its first 12 hex
// digits, as Python's hmac and `openssl dgst -hmac` compute it (docs/observability.md).
TEST(KeyHasher, HmacSha256OfScopeAndKey) {
  EXPECT_EQ(KeyHasher("Jefe")("", "orders:k-1"), "e76ff5d19b0c");
  EXPECT_EQ(KeyHasher(std::string(64, 'x'))("", "a"), "654ae1c21000") << "a key of one block";
  EXPECT_EQ(KeyHasher(std::string(131, '\xaa'))("user-7", "pay:T1001"), "1374557c69db")
      << "a key longer than a block is hashed first";
  EXPECT_NE(KeyHasher("Jefe")("", "orders:k-1"), hash_subject("\norders:k-1").substr(0, 12));
  // Without a secret, one of its own: two hashers disagree, each agrees with itself.
  const KeyHasher a(""), b("");
  EXPECT_EQ(a("s", "k"), a("s", "k"));
  EXPECT_NE(a("s", "k"), b("s", "k"));
  EXPECT_NE(a("s", "k"), hash_subject("s\nk").substr(0, 12));
}

TEST(Identity, HeaderKeyAndSubject) {
  TestRequest r = post("/orders");
  r.header("X-Tenant", "acme").header("Idempotency-Key", "k-1");
  EXPECT_EQ(decide(r), "protect acme|k-1|16");
  TestRequest quoted = post("/orders");
  quoted.header("x-tenant", "acme")
      .header("idempotency-key", "\"k-1\"");  // names case-insensitive; sf-string
  EXPECT_EQ(decide(quoted), "protect acme|k-1|16");
}

TEST(Identity, SubjectIsCheckedFirst) {
  TestRequest r = post("/orders", std::string(100, 'x'));  // and the body is too large
  EXPECT_EQ(decide(r), "reject subject-missing");
  r.header("X-Tenant", "");
  EXPECT_EQ(decide(r), "reject subject-missing");  // empty is absent
  r.headers = {{"X-Tenant", "acme"}};
  EXPECT_EQ(decide(r), "reject key-missing");  // then the key, before the body
  r.header("Idempotency-Key", "k");
  EXPECT_EQ(decide(r), "reject body-too-large");
  r.body = std::string(64, 'x');  // max_body is inclusive
  EXPECT_EQ(decide(r), "protect acme|k|16");
}

TEST(Identity, HeaderKeyProblems) {
  auto with_key = [](std::vector<std::string> values) {
    TestRequest r = post("/orders");
    r.header("X-Tenant", "t");
    for (std::string& v : values) r.header("Idempotency-Key", std::move(v));
    return decide(r);
  };
  EXPECT_EQ(with_key({}), "reject key-missing");
  EXPECT_EQ(with_key({""}), "reject key-invalid");
  EXPECT_EQ(with_key({"has space"}), "reject key-invalid");
  EXPECT_EQ(with_key({std::string(256, 'k')}), "reject key-invalid");
  EXPECT_EQ(with_key({"\"unterminated"}), "reject key-invalid");
  EXPECT_EQ(with_key({"a", "b"}), "reject key-invalid");  // sent twice
  EXPECT_EQ(with_key({std::string(255, 'k')}), "protect t|" + std::string(255, 'k') + "|16");
}

TEST(Identity, OptionalHeaderKey) {
  TestRequest r = post("/optional");
  EXPECT_EQ(decide(r), "unprotected");
  r.header("Idempotency-Key", "ignored-here");  // this route's key is X-Request-Id
  EXPECT_EQ(decide(r), "unprotected");
  r.header("X-Request-Id", "bad key");
  EXPECT_EQ(decide(r), "reject key-invalid");  // present but invalid is still an error
  r.headers = {{"X-Request-Id", "r1"}};
  EXPECT_EQ(decide(r), "protect |r1|16");
}

TEST(Identity, TokenKey) {
  TestRequest r = post("/forms/signup");
  EXPECT_EQ(decide(r), "reject subject-missing");  // tokens.subject
  r.header("X-User-Id", "u7");
  EXPECT_EQ(decide(r), "reject token-missing");
  r.header("Idempotency-Token", "not a token");
  EXPECT_EQ(decide(r), "reject token-invalid");
  r.headers = {{"X-User-Id", "u7"}, {"Idempotency-Token", "tok_abc-123"}};
  EXPECT_EQ(decide(r), "protect u7|tok_abc-123|16");
  r.header("Idempotency-Token", "tok_2");
  EXPECT_EQ(decide(r), "reject token-invalid");  // sent twice

  TestRequest optional = post("/maybe-forms/x");
  optional.header("X-User-Id", "u7");
  EXPECT_EQ(decide(optional), "unprotected");
}

TEST(Identity, TemplateKey) {
  EXPECT_EQ(decide_post("/pay", R"({"out_trade_no": "T-1"})"), "protect |pay:T-1|16");
  EXPECT_EQ(decide_post("/pay", R"({"x": 1})"), "reject key-missing");
  EXPECT_EQ(decide_post("/pay", R"({"out_trade_no": {}})"), "reject key-invalid");
  EXPECT_EQ(decide_post("/pay", "not json"), "reject body-invalid");
  EXPECT_EQ(decide_post("/pay", std::string(65, ' ')), "reject body-too-large");
}

TEST(Identity, OptionalTemplateKey) {
  EXPECT_EQ(decide_post("/optional-pay", R"({"x": 1})"), "unprotected");
  EXPECT_EQ(decide_post("/optional-pay", R"({"out_trade_no": null})"), "unprotected");
  // Only an absent key makes the request unprotected; a wrong body or value is an error.
  EXPECT_EQ(decide_post("/optional-pay", "not json"), "reject body-invalid");
  EXPECT_EQ(decide_post("/optional-pay", R"({"out_trade_no": [1]})"), "reject key-invalid");
}

TEST(Identity, HeaderHashSubjectScopesAndRenders) {
  TestRequest r = post("/hashed", R"({"id": 7})");
  EXPECT_EQ(decide(r), "reject subject-missing");
  r.header("Authorization", "Bearer alice");
  const std::string scope = hash_subject("Bearer alice");
  EXPECT_EQ(decide(r), "protect " + scope + "|u:" + scope + ":7|16");
  TestRequest bob = post("/hashed", R"({"id": 7})");
  bob.header("Authorization", "Bearer bob");
  EXPECT_NE(decide(bob), decide(r));  // one key, two users, two records
}

TEST(Identity, LockModeHasNoFingerprint) {
  TestRequest r = post("/skus/A%2D1/deduct", "anything");
  EXPECT_EQ(decide(r), "protect |stock:A-1|0");
}

TEST(Identity, FingerprintNoneIsNamedNotEmpty) {
  TestRequest r = post("/nofp");
  r.header("Idempotency-Key", "k");
  EXPECT_EQ(decide(r), "protect |k|16");
}

TEST(Identity, JsonFingerprintReadsTheBodyOnceWithTheKey) {
  TestRequest a = post("/pay", R"({"out_trade_no": "T-1", "amount": 1})");
  TestRequest b = post("/pay", "{\"amount\": 1.0,\n \"out_trade_no\": \"T-1\"}");
  std::optional<RouteMatch> m = match_route(config().routes, "POST", "/pay");
  ASSERT_TRUE(m.has_value());
  Decision da = identify_request(*m, a.view());
  Decision db = identify_request(*m, b.view());
  ASSERT_EQ(da.verdict, Verdict::protect);
  EXPECT_EQ(da.identity.fingerprint, db.identity.fingerprint);
  EXPECT_EQ(da.identity.key, db.identity.key);
}

Identity identity_of(TestRequest& req) {
  std::optional<RouteMatch> m = match_route(config().routes, req.method, req.target);
  EXPECT_TRUE(m.has_value()) << req.target;
  if (!m) return {};
  Decision d = identify_request(*m, req.view());
  EXPECT_EQ(d.verdict, Verdict::protect) << req.target;
  return d.identity;
}

TEST(Identity, RecordsLiveInTheRouteKeySpace) {
  TestRequest order = post("/orders");
  order.header("X-Tenant", "acme").header("Idempotency-Key", "k-1");
  Identity o = identity_of(order);
  EXPECT_EQ(o.key, "k-1");  // what the upstream receives
  EXPECT_EQ(o.record_key, "orders:k-1");
  TestRequest pay = post("/pay", R"({"out_trade_no": "T-1"})");
  EXPECT_EQ(identity_of(pay).record_key, "pay:pay:T-1");
  TestRequest token = post("/forms/x");
  token.header("X-User-Id", "u7").header("Idempotency-Token", "tok");
  Identity t = identity_of(token);
  EXPECT_EQ(t.key, "tok");  // token operations take the token itself
  EXPECT_EQ(t.record_key, "form:tok");
  TestRequest lock = post("/skus/A-1/deduct");
  EXPECT_EQ(identity_of(lock).record_key, "stock:stock:A-1");
}

TEST(Identity, AClientKeyCannotReachAnotherRoutesRecord) {
  // A header-key route without a subject, sent the key the payment callback renders for T1001.
  TestRequest hijack = post("/nofp");
  hijack.header("Idempotency-Key", "pay:T1001");
  Identity h = identity_of(hijack);
  TestRequest callback = post("/pay", R"({"out_trade_no": "T1001"})");
  Identity c = identity_of(callback);
  EXPECT_EQ(h.key, c.key);                // the same rendered key...
  EXPECT_EQ(h.scope, c.scope);            // ...in the same scope...
  EXPECT_NE(h.record_key, c.record_key);  // ...is two records
}

TEST(Identity, RoutesNamingOneKeySpaceShareRecords) {
  TestRequest a = post("/pay", R"({"out_trade_no": "T1001"})");
  TestRequest b = post("/pay-notify", R"({"out_trade_no": "T1001"})");
  EXPECT_EQ(identity_of(a).record_key, identity_of(b).record_key);
}

TEST(Identity, StagesComposeAsIdentifyRequest) {
  // The HTTP layer runs check_head before reading the body, then identify.
  std::optional<RouteMatch> m = match_route(config().routes, "POST", "/pay");
  TestRequest r = post("/pay");
  Decision head = check_head(*m->route, r.view());
  ASSERT_EQ(head.verdict, Verdict::protect);
  EXPECT_EQ(head.identity.key, "");  // a template key waits for the body
  r.body = R"({"out_trade_no": "T-9"})";
  EXPECT_FALSE(check_body_size(*m->route, r.body.size()).has_value());
  EXPECT_EQ(check_body_size(*m->route, 65)->problem, Problem::body_too_large);
  Decision done = identify(*m->route, m->params, r.view(), std::move(head));
  EXPECT_EQ(done.identity.key, "pay:T-9");
  // A decision other than protect passes through identify unchanged.
  Decision rejected = identify(*m->route, m->params, r.view(), Decision::reject({Problem::key_missing, "x"}));
  EXPECT_EQ(rejected.verdict, Verdict::reject);
  EXPECT_EQ(identify(*m->route, m->params, r.view(), Decision::unprotected()).verdict, Verdict::unprotected);
}

TEST(Problems, NamesStatusesAndMetricLabels) {
  struct Case {
    Problem p;
    std::string_view name;
    int status;
  };
  for (Case c : {Case{Problem::key_missing, "key-missing", 400},
                 {Problem::key_invalid, "key-invalid", 400},
                 {Problem::subject_missing, "subject-missing", 400},
                 {Problem::body_too_large, "body-too-large", 413},
                 {Problem::body_invalid, "body-invalid", 400},
                 {Problem::token_missing, "token-missing", 400},
                 {Problem::token_invalid, "token-invalid", 400},
                 {Problem::key_reused, "key-reused", 422},
                 {Problem::in_progress, "in-progress", 409},
                 {Problem::duplicate, "duplicate", 409},
                 {Problem::outcome_uncertain, "outcome-uncertain", 409},
                 {Problem::result_not_stored, "result-not-stored", 409},
                 {Problem::locked, "locked", 409},
                 {Problem::upstream_unavailable, "upstream-unavailable", 502},
                 {Problem::upstream_timeout, "upstream-timeout", 504},
                 {Problem::store_unavailable, "store-unavailable", 503},
                 {Problem::unauthorized, "unauthorized", 401},
                 {Problem::forbidden, "forbidden", 403},
                 {Problem::unsupported_media_type, "unsupported-media-type", 415},
                 {Problem::request_invalid, "request-invalid", 400},
                 {Problem::request_ambiguous, "request-ambiguous", 400}}) {
    EXPECT_EQ(problem_name(c.p), c.name);
    EXPECT_EQ(problem_status(c.p), c.status) << c.name;
    std::string metric(c.name);
    for (char& ch : metric) ch = ch == '-' ? '_' : ch;
    EXPECT_EQ(problem_metric_name(c.p), metric);
    EXPECT_FALSE(problem_title(c.p).empty());
  }
}

}  // namespace
}  // namespace idem::gateway
