// Principals from a verified JWT (docs/configuration.md, "Principals from a JWT"; docs/http.md,
// "Whose answer a replay is"), against the idem binary and the test upstream, which counts
// how often it ran each key. Tokens are signed by keys the test makes (RS256 and ES256 from
// a JWK Set, chosen by kid): a refreshed token with the same `sub` replays, another `sub` is
// 409 principal-mismatch, a forged or expired token is 401 credentials-invalid and reaches
// neither the store nor the upstream, and SIGHUP rotates the keys.
#include <chrono>
#include <csignal>

#include "e2e/e2e_fixture.h"
#include "testutil/jwt_signer.h"

namespace idem::e2e {
namespace {

using testutil::jwt;
using testutil::TestKeyPair;

std::int64_t now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A token for `sub`, valid for five minutes unless `exp` says otherwise; `jti` makes two
// tokens of one subject differ, as a refresh does.
std::string token(const TestKeyPair& key, std::string_view kid, const std::string& sub,
                  std::int64_t exp_in = 300, int jti = 1) {
  const std::string alg = key.is_rsa() ? "RS256" : "ES256";
  return jwt(R"({"alg":")" + alg + R"(","kid":")" + std::string(kid) + R"("})",
             R"({"sub":")" + sub + R"(","iss":"https://sso.test/realms/shop","aud":"orders-api","iat":)" +
                 std::to_string(now()) + R"(,"exp":)" + std::to_string(now() + exp_in) + R"(,"jti":"j)" +
                 std::to_string(jti) + R"("})",
             &key);
}

Headers bearer(const std::string& t) { return {{"Authorization", "Bearer " + t}}; }

class JwtPrincipals : public GatewayE2E {
 protected:
  static void SetUpTestSuite() {
    rsa_ = new TestKeyPair(TestKeyPair::rsa());
    ec_ = new TestKeyPair(TestKeyPair::ec());
    start(routes);
  }
  static void TearDownTestSuite() {
    GatewayE2E::TearDownTestSuite();
    delete rsa_;
    delete ec_;
  }
  static std::string routes(unsigned short l, unsigned short u, unsigned short a) {
    write_file(*dir_ + "/jwks.json", R"({"keys":[)" + rsa_->jwk("rsa-1") + "," + ec_->jwk("ec-1") + "]}");
    return config_head(l, u, a, "memory:") + "jwt:\n  algorithms: [RS256, ES256]\n  jwks_file: " + *dir_ +
           R"(/jwks.json
  issuer: https://sso.test/realms/shop
  audience: orders-api
routes:
  - name: orders
    match: { method: POST, path: /orders }
    principal: jwt
  - name: carts
    match: { method: POST, path: /carts }
    subject: jwt
)";
  }
  static bool has_record(const std::string& space, const std::string& key) {
    return request(admin_, verb::get, "/v1/records/_/" + key + "?key_space=" + space).result_int() == 200;
  }

  static inline TestKeyPair* rsa_ = nullptr;
  static inline TestKeyPair* ec_ = nullptr;
};

// A client that refreshed its token between an attempt and its retry is the same `sub`:
// replayed, never run twice; another user's token is refused and runs nothing.
TEST_F(JwtPrincipals, ARefreshedTokenOfTheSameSubjectReplaysAndAnotherSubjectIsRefused) {
  const std::string key = unique("order");
  Response first = post("/orders", key, R"({"sku":"A-1"})", bearer(token(*rsa_, "rsa-1", "alice", 300, 1)));
  ASSERT_EQ(first.result_int(), 201u) << first.body();

  Response refreshed = post("/orders", key, R"({"sku":"A-1"})", bearer(token(*ec_, "ec-1", "alice", 600, 2)));
  EXPECT_EQ(refreshed.result_int(), 201u) << refreshed.body();
  EXPECT_EQ(header(refreshed, "Idempotent-Replayed"), "true");
  EXPECT_EQ(refreshed.body(), first.body());

  Response other = post("/orders", key, R"({"sku":"A-1"})", bearer(token(*rsa_, "rsa-1", "mallory")));
  EXPECT_EQ(other.result_int(), 409u);
  EXPECT_EQ(problem_type(other), "urn:idem:problem:principal-mismatch");
  EXPECT_EQ(other.body().find("execution"), std::string::npos) << "the stored answer leaked";
  EXPECT_EQ(executions(key), 1);

  // On `subject: jwt` records are each user's: the refresh replays, another user's key is
  // its own.
  const std::string cart = unique("cart");
  Response mine = post("/carts", cart, "{}", bearer(token(*ec_, "ec-1", "alice", 300, 3)));
  ASSERT_EQ(mine.result_int(), 201u) << mine.body();
  EXPECT_EQ(header(post("/carts", cart, "{}", bearer(token(*rsa_, "rsa-1", "alice", 300, 4))),
                   "Idempotent-Replayed"),
            "true");
  EXPECT_EQ(header(post("/carts", cart, "{}", bearer(token(*rsa_, "rsa-1", "bob"))), "Idempotent-Replayed"),
            "");
  EXPECT_EQ(executions(cart), 2);
}

// Forged, expired, another issuer's or malformed: 401 credentials-invalid before anything
// runs; no record, and the upstream never sees the request.
TEST_F(JwtPrincipals, ATokenThatDoesNotVerifyIsRefusedBeforeTheStoreAndTheUpstream) {
  const TestKeyPair mallory = TestKeyPair::ec();
  const std::string good = token(*ec_, "ec-1", "alice");
  std::string wrong_issuer = jwt(R"({"alg":"ES256","kid":"ec-1"})",
                                 R"({"sub":"alice","iss":"https://evil.test","aud":"orders-api","exp":)" +
                                     std::to_string(now() + 300) + "}",
                                 ec_);
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"forged", token(mallory, "ec-1", "alice")},
      {"expired", token(*ec_, "ec-1", "alice", -3600)},
      {"another issuer", wrong_issuer},
      {"malformed", good.substr(0, good.size() - 3) + "*"},
      {"alg none", testutil::base64url(R"({"alg":"none"})") + "." +
                       good.substr(good.find('.') + 1, good.rfind('.') - good.find('.'))},
  };
  for (const auto& [what, t] : cases) {
    for (const char* route : {"/orders", "/carts"}) {
      const std::string key = unique("bad");
      Response r = post(route, key, "{}", bearer(t));
      EXPECT_EQ(r.result_int(), 401u) << what << " " << route << ": " << r.body();
      EXPECT_EQ(problem_type(r), "urn:idem:problem:credentials-invalid") << what;
      EXPECT_EQ(body_json(r).at("retryable"), json::value(false));
      EXPECT_EQ(header(r, "WWW-Authenticate"), R"(Bearer error="invalid_token")") << what;
      EXPECT_EQ(executions(key), 0) << what;
      EXPECT_FALSE(has_record(route + 1, key)) << what;
    }
  }
  // Without a token: `subject: jwt` needs one; `principal: jwt` binds no one, as a request
  // without credentials always has (a payment callback).
  const std::string key = unique("none");
  EXPECT_EQ(problem_type(post("/carts", key, "{}")), "urn:idem:problem:credentials-invalid");
  EXPECT_EQ(executions(key), 0);
  EXPECT_EQ(post("/orders", key, "{}").result_int(), 201u);
  EXPECT_EQ(header(post("/orders", key, "{}", bearer(good)), "Idempotent-Replayed"), "true");
  EXPECT_EQ(executions(key), 1);
}

// SIGHUP reads the key file again: after a rotation the new key's tokens verify and the old
// key's are refused; a file that holds no key fails the reload and keeps the running keys.
TEST(JwtKeyRotation, SighupReadsTheKeysAgainAndABadFileKeepsTheRunningOnes) {
  struct Dir {
    std::string path = temp_dir();
    ~Dir() { remove_dir(path); }
  } tmp;
  Process upstream({IDEM_TEST_UPSTREAM}, tmp.path + "/upstream.log", true);
  const unsigned short port = free_port(), admin = free_port();
  const std::string file = tmp.path + "/idem.yaml", log = tmp.path + "/idem.log", pem = tmp.path + "/jwt.pem";
  const TestKeyPair old_key = TestKeyPair::ec(), new_key = TestKeyPair::ec();
  write_file(pem, old_key.public_pem());
  write_file(
      file,
      config_head(port, upstream.port(), admin, "memory:") + "jwt:\n  algorithms: ES256\n  key_file: " + pem +
          "\nroutes:\n  - name: orders\n    match: {method: POST, path: /orders}\n    principal: jwt\n");
  Process idem({IDEM_BIN, "serve", "--config", file}, log);
  ASSERT_TRUE(wait_healthy(admin, 5000)) << read_text(log);
  auto post_with = [&](const TestKeyPair& key, const std::string& k) {
    return request(port, verb::post, "/orders",
                   {{"Idempotency-Key", k}, {"Authorization", "Bearer " + token(key, "", "alice")}}, "{}")
        .result_int();
  };
  auto reloads = [&] {
    std::size_t n = 0;
    for (std::size_t at = 0; (at = read_text(log).find("idem: reload", at)) != std::string::npos; ++at) ++n;
    return n;
  };
  EXPECT_EQ(post_with(old_key, "k1"), 201u);
  EXPECT_EQ(post_with(new_key, "k2"), 401u);

  write_file(pem, new_key.public_pem());
  idem.signal(SIGHUP);
  ASSERT_TRUE(testutil::eventually([&] { return reloads() == 1; })) << read_text(log);
  EXPECT_EQ(post_with(new_key, "k3"), 201u);
  EXPECT_EQ(post_with(old_key, "k4"), 401u);

  write_file(pem, "-----BEGIN PUBLIC KEY-----\nnot a key\n-----END PUBLIC KEY-----\n");
  idem.signal(SIGHUP);
  ASSERT_TRUE(testutil::eventually([&] { return reloads() == 2; })) << read_text(log);
  EXPECT_NE(read_text(log).find("idem: reload failed, the running config is kept: " + file +
                                ":8: jwt.key_file: key_file '" + pem +
                                "' holds no PEM public key (BEGIN PUBLIC KEY)"),
            std::string::npos)
      << read_text(log);
  EXPECT_EQ(post_with(new_key, "k5"), 201u);
  EXPECT_EQ(post_with(old_key, "k6"), 401u);
  idem.signal(SIGTERM);
  EXPECT_EQ(idem.wait(5000), 0);
}

}  // namespace
}  // namespace idem::e2e
