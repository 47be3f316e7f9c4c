// Whose answer a replay is (gateway/model/principal.h; docs/http.md, "Whose answer a replay
// is"): which principal a route binds, how a request's is read (Authorization normalised),
// how it is folded into the fingerprint, and what a store's mismatch means, row by row.
#include "gateway/model/principal.h"

#include <gtest/gtest.h>

#include "gateway/model/config/config.h"
#include "gateway/model/request_reading.h"
#include "gateway/model/test_request.h"

namespace idem::gateway {
namespace {

using testing::TestRequest;

const Config& config() {
  static const Config c = load_config_text(R"(
routes:
  - name: orders
    match: {method: POST, path: /orders}
  - name: users
    match: {method: POST, path: /users}
    subject: header:X-User-Id
  - name: users-by-token
    match: {method: POST, path: /users-by-token}
    subject: header:X-User-Id
    principal: authorization
  - name: clients
    match: {method: POST, path: /clients}
    principal: header:X-Api-Client
  - name: open
    match: {method: POST, path: /open}
    principal: none
  - name: stock
    match: {method: POST, path: "/skus/{sku}/deduct"}
    key: "stock:{path.sku}"
    mode: lock
)",
                                           "principal.yaml");
  return c;
}

const Route& route(std::string_view name) {
  for (const Route& r : config().routes)
    if (r.name == name) return r;
  throw std::runtime_error("no route " + std::string(name));
}

// "principal <value>" for a protected request, "reject <problem>" otherwise.
std::string principal_of_request(TestRequest& req) {
  std::optional<RouteMatch> m = match_route(config().routes, req.method, req.target);
  if (!m) return "unmatched";
  Decision d = identify_request(*m, req.view());
  if (d.verdict == Verdict::reject) return "reject " + std::string(problem_name(d.rejection.problem));
  return "principal " + d.identity.principal;
}

TestRequest keyed(std::string target) {
  TestRequest r;
  r.target = std::move(target);
  r.header("Idempotency-Key", "k-1");
  return r;
}

TEST(EffectivePrincipal, AuthorizationUnlessTheRouteHasASubject) {
  EXPECT_EQ(effective_principal(route("orders").policy),
            (Principal{Principal::Kind::header, "Authorization"}));
  EXPECT_EQ(effective_principal(route("users").policy).kind, Principal::Kind::subject);
  EXPECT_EQ(effective_principal(route("users-by-token").policy),
            (Principal{Principal::Kind::header, "Authorization"}));
  EXPECT_EQ(effective_principal(route("clients").policy),
            (Principal{Principal::Kind::header, "X-Api-Client"}));
  EXPECT_EQ(effective_principal(route("open").policy).kind, Principal::Kind::none);
}

// The principal is Authorization as the service reads it: one spelling of the scheme, one
// space, no whitespace around the credentials (request_reading.h, normalize_credentials).
TEST(PrincipalOf, AuthorizationIsReadNormalised) {
  for (const char* spelling : {"Bearer abc", "bearer abc", "BEARER  abc", "Bearer abc  ", "bEaReR\tabc"}) {
    TestRequest r = keyed("/orders");
    r.header("Authorization", spelling);
    EXPECT_EQ(principal_of_request(r), "principal Bearer abc") << spelling;
  }
  TestRequest basic = keyed("/orders");
  basic.header("authorization", "basic dXNlcjpwdw");
  EXPECT_EQ(principal_of_request(basic), "principal Basic dXNlcjpwdw==");
  TestRequest other = keyed("/orders");
  other.header("Authorization", "Bearer abd");
  EXPECT_EQ(principal_of_request(other), "principal Bearer abd");
}

TEST(PrincipalOf, NoCredentialsBindNoOne) {
  TestRequest none = keyed("/orders");
  EXPECT_EQ(principal_of_request(none), "principal ");
  TestRequest empty = keyed("/orders");
  empty.header("Authorization", "");
  EXPECT_EQ(principal_of_request(empty), "principal ");
}

// Sent twice, the service may read either: refused before anything is claimed, as a
// subject's header is. Named in Connection, the service would never see it.
TEST(PrincipalOf, AHeaderSentTwiceOrNamedInConnectionIsAmbiguous) {
  TestRequest twice = keyed("/orders");
  twice.header("Authorization", "Bearer a").header("Authorization", "Bearer b");
  EXPECT_EQ(principal_of_request(twice), "reject request-ambiguous");
  TestRequest hidden = keyed("/orders");
  hidden.header("Authorization", "Bearer a").header("Connection", "authorization");
  EXPECT_EQ(principal_of_request(hidden), "reject request-ambiguous");
  EXPECT_TRUE(route_reads_header(route("clients"), "x-api-client"));
  EXPECT_FALSE(route_reads_header(route("clients"), "Authorization"));
  EXPECT_FALSE(route_reads_header(route("open"), "Authorization"));
}

TEST(PrincipalOf, TheRoutesChoice) {
  TestRequest client = keyed("/clients");
  client.header("X-Api-Client", "c-1").header("Authorization", "Bearer a");
  EXPECT_EQ(principal_of_request(client), "principal c-1");
  for (const char* target : {"/open", "/users"}) {
    TestRequest r = keyed(target);
    r.header("Authorization", "Bearer a").header("X-User-Id", "u-1");
    EXPECT_EQ(principal_of_request(r), "principal ") << target;
  }
  // A lock stores no answer: nothing to bind, nothing read.
  TestRequest lock;
  lock.target = "/skus/A-1/deduct";
  lock.header("Authorization", "Bearer a").header("Authorization", "Bearer b");
  EXPECT_EQ(principal_of_request(lock), "principal ");
}

const std::string kFingerprint(16, 'f');

TEST(PrincipalBinder, FoldsAKeyedTagIntoTheFingerprint) {
  const PrincipalBinder binder("secret");
  EXPECT_EQ(binder.bind(kFingerprint, ""), kFingerprint) << "no principal: today's fingerprint";
  const std::string a = binder.bind(kFingerprint, "Bearer a");
  ASSERT_EQ(a.size(), kRequestFingerprintSize + kPrincipalTagSize);
  EXPECT_EQ(a.substr(0, 16), kFingerprint);
  EXPECT_EQ(a, binder.bind(kFingerprint, "Bearer a"));
  EXPECT_NE(a, binder.bind(kFingerprint, "Bearer b"));
  // HMAC-SHA256("secret", "principal\nBearer a"), its first 16 bytes: not a plain hash.
  EXPECT_EQ(a.substr(16), KeyHasher("secret").mac("principal", "Bearer a").substr(0, 16));
  EXPECT_NE(a, PrincipalBinder("another secret").bind(kFingerprint, "Bearer a"));
}

// Without IDEM_PRINCIPAL_SECRET every gateway, and every restart, agrees (unlike the log's
// key_hash, whose missing secret is a random one): else a repeat after a restart would be
// refused.
TEST(PrincipalBinder, WithoutASecretEveryGatewayAgrees) {
  EXPECT_EQ(PrincipalBinder("").bind(kFingerprint, "Bearer a"),
            PrincipalBinder("").bind(kFingerprint, "Bearer a"));
  EXPECT_NE(PrincipalBinder("").bind(kFingerprint, "Bearer a"),
            PrincipalBinder("secret").bind(kFingerprint, "Bearer a"));
}

TEST(ReadMismatch, EveryRow) {
  const PrincipalBinder binder("secret");
  const std::string body = kFingerprint, other_body(16, 'g');
  const std::string a = binder.bind(body, "Bearer a"), b = binder.bind(body, "Bearer b");
  const std::string a_other_body = binder.bind(other_body, "Bearer a");
  const std::string b_other_body = binder.bind(other_body, "Bearer b");
  using M = MismatchReading;
  // A bound record: another principal, or none, whatever its body.
  EXPECT_EQ(read_mismatch(a, b), M::principal_mismatch);
  EXPECT_EQ(read_mismatch(a, b_other_body), M::principal_mismatch) << "no oracle for the body";
  EXPECT_EQ(read_mismatch(a, body), M::principal_mismatch) << "no credentials";
  EXPECT_EQ(read_mismatch(a, other_body), M::principal_mismatch);
  EXPECT_EQ(read_mismatch(a, a_other_body), M::key_reused) << "the same principal, another body";
  // A record bound to no one (no credentials first, or written before principals).
  EXPECT_EQ(read_mismatch(body, a), M::as_unbound);
  EXPECT_EQ(read_mismatch(body, a_other_body), M::key_reused);
  EXPECT_EQ(read_mismatch(body, other_body), M::key_reused);
  // Anything else a store may hold (a control API caller's fingerprint) is another request.
  EXPECT_EQ(read_mismatch("x", a), M::key_reused);
  EXPECT_EQ(read_mismatch(std::string(40, 'f'), a), M::key_reused);
}

}  // namespace
}  // namespace idem::gateway
