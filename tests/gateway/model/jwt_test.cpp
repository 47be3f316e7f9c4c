// Principals from a verified JWT (gateway/model/jwt.h; docs/configuration.md, "Principals
// from a JWT"): tokens signed at test time with keys the test makes, checked row by row:
// good HS256/RS256/ES256, forged, alg none, an algorithm not allowed, HS256 with the RSA
// public key as its secret, exp/nbf with and without leeway, strict base64url, kid from a
// JWK Set, iss and aud; and how a route reads the token (401 credentials-invalid).
#include "gateway/model/jwt.h"

#include <gtest/gtest.h>

#include "gateway/model/config/config.h"
#include "gateway/model/principal.h"
#include "gateway/model/request_identity.h"
#include "gateway/model/test_request.h"
#include "testutil/jwt_signer.h"
#include "testutil/temp_dir.h"

namespace idem::gateway {
namespace {

using testutil::jwt;
using testutil::TestKeyPair;

constexpr std::int64_t kNow = 1'800'000'000;
const std::string kSecret = "0123456789abcdef0123456789abcdef-test-secret";

struct Keys {
  TestKeyPair rsa = TestKeyPair::rsa();
  TestKeyPair ec = TestKeyPair::ec();
  TestKeyPair other_ec = TestKeyPair::ec();
  testutil::TempDir dir;
  Keys() {
    testutil::write_file(dir.file("rsa.pem"), rsa.public_pem());
    testutil::write_file(dir.file("ec.pem"), ec.public_pem());
    testutil::write_file(dir.file("secret"), kSecret + "\n");
    testutil::write_file(dir.file("jwks.json"),
                         R"({"keys":[)" + rsa.jwk("r1") + "," + ec.jwk("e1") + "," + other_ec.jwk("e2") +
                             R"(,{"kty":"RSA","use":"enc","kid":"x","n":"AQAB","e":"AQAB"}]})");
  }
};

const Keys& keys() {
  static const Keys k;
  return k;
}

std::shared_ptr<const JwtVerifier> verifier(std::vector<JwtAlgorithm> algs, const std::string& key_file,
                                            const std::string& jwks_file = "") {
  JwtSettings s;
  s.algorithms = std::move(algs);
  return JwtVerifier::load(s, key_file.empty() ? "" : keys().dir.file(key_file),
                           jwks_file.empty() ? "" : keys().dir.file(jwks_file));
}

std::string payload(std::string extra = "") {
  return R"({"sub":"alice","exp":)" + std::to_string(kNow + 300) + extra + "}";
}

// "sub=<claim>" or the rejection's detail.
std::string check(const JwtVerifier& v, const std::string& token, std::int64_t now = kNow) {
  ProblemOr<std::string> r = v.verify(token, "sub", now);
  if (r) return "sub=" + *r;
  EXPECT_EQ(r.problem(), Problem::credentials_invalid);
  return r.rejection().detail;
}

TEST(Jwt, GoodTokensOfEachAlgorithmVerify) {
  auto hs = verifier({JwtAlgorithm::hs256}, "secret");
  EXPECT_EQ(check(*hs, jwt(R"({"alg":"HS256","typ":"JWT"})", payload(), nullptr, kSecret)), "sub=alice");
  auto rs = verifier({JwtAlgorithm::rs256}, "rsa.pem");
  EXPECT_EQ(check(*rs, jwt(R"({"alg":"RS256"})", payload(), &keys().rsa)), "sub=alice");
  auto es = verifier({JwtAlgorithm::es256}, "ec.pem");
  EXPECT_EQ(check(*es, jwt(R"({"alg":"ES256"})", payload(), &keys().ec)), "sub=alice");
}

TEST(Jwt, AForgedSignatureIsRefused) {
  auto rs = verifier({JwtAlgorithm::rs256}, "rsa.pem");
  const TestKeyPair mallory = TestKeyPair::rsa();
  EXPECT_EQ(check(*rs, jwt(R"({"alg":"RS256"})", payload(), &mallory)),
            "the JWT signature does not verify with any key of this gateway");
  // The payload changed after signing.
  std::string good = jwt(R"({"alg":"RS256"})", payload(), &keys().rsa);
  std::string other = jwt(R"({"alg":"RS256"})", R"({"sub":"mallory","exp":1900000000})", &keys().rsa);
  const std::string spliced = good.substr(0, good.find('.')) +
                              other.substr(other.find('.'), other.rfind('.') - other.find('.')) +
                              good.substr(good.rfind('.'));
  EXPECT_EQ(check(*rs, spliced), "the JWT signature does not verify with any key of this gateway");
  auto es = verifier({JwtAlgorithm::es256}, "ec.pem");
  EXPECT_EQ(check(*es, jwt(R"({"alg":"ES256"})", payload(), &keys().other_ec)),
            "the JWT signature does not verify with any key of this gateway");
  auto hs = verifier({JwtAlgorithm::hs256}, "secret");
  EXPECT_EQ(check(*hs, jwt(R"({"alg":"HS256"})", payload(), nullptr, kSecret + "x")),
            "the JWT signature does not verify with any key of this gateway");
}

TEST(Jwt, AlgNoneAndAlgorithmsNotAllowedAreRefused) {
  auto rs = verifier({JwtAlgorithm::rs256}, "rsa.pem");
  const std::string unsigned_token =
      testutil::base64url(R"({"alg":"none"})") + "." + testutil::base64url(payload()) + ".";
  EXPECT_EQ(check(*rs, unsigned_token), "the JWT is signed with an algorithm this gateway does not accept");
  EXPECT_EQ(check(*rs, jwt(R"({"alg":"RS512"})", payload(), &keys().rsa)),
            "the JWT is signed with an algorithm this gateway does not accept");
  EXPECT_EQ(check(*rs, jwt(R"({"alg":"HS256"})", payload(), nullptr, kSecret)),
            "the JWT is signed with an algorithm this gateway does not accept");
  EXPECT_EQ(check(*rs, jwt(R"({"typ":"JWT"})", payload(), &keys().rsa)), "the JWT header has no alg");
  EXPECT_EQ(check(*rs, jwt(R"({"alg":"RS256","crit":["exp"]})", payload(), &keys().rsa)),
            "the JWT header has crit extensions, which are not understood");
}

// The classic confusion: HS256 with the RSA public key's PEM as the HMAC secret. Even with
// both algorithms allowed, an RSA key verifies RS256 only, and a key file is one key.
TEST(Jwt, HS256WithTheRsaPublicKeyAsSecretIsRefused) {
  EXPECT_THROW(verifier({JwtAlgorithm::rs256, JwtAlgorithm::hs256}, "rsa.pem"), std::runtime_error);
  auto rs = verifier({JwtAlgorithm::rs256}, "rsa.pem");
  const std::string forged = jwt(R"({"alg":"HS256"})", payload(), nullptr, keys().rsa.public_pem());
  EXPECT_EQ(check(*rs, forged), "the JWT is signed with an algorithm this gateway does not accept");
  // From a JWK Set holding RSA keys, HS256 finds no key to try.
  auto set = verifier({JwtAlgorithm::rs256, JwtAlgorithm::es256}, "", "jwks.json");
  EXPECT_EQ(check(*set, jwt(R"({"alg":"HS256","kid":"r1"})", payload(), nullptr, keys().rsa.public_pem())),
            "the JWT is signed with an algorithm this gateway does not accept");
}

TEST(Jwt, ExpAndNbfAreCheckedWithTheLeeway) {
  auto hs = verifier({JwtAlgorithm::hs256}, "secret");  // leeway 60s
  auto token = [&](std::string claims) { return jwt(R"({"alg":"HS256"})", claims, nullptr, kSecret); };
  const std::string exp = std::to_string(kNow);
  EXPECT_EQ(check(*hs, token(R"({"sub":"a","exp":)" + exp + "}"), kNow + 59), "sub=a");
  EXPECT_EQ(check(*hs, token(R"({"sub":"a","exp":)" + exp + "}"), kNow + 60), "the JWT has expired");
  EXPECT_EQ(check(*hs, token(R"({"sub":"a","exp":)" + exp + "}"), kNow + 3600), "the JWT has expired");
  EXPECT_EQ(check(*hs, token(R"({"sub":"a"})")),
            "the JWT has no exp (a numeric date): a token that never expires is not accepted");
  EXPECT_EQ(check(*hs, token(R"({"sub":"a","exp":"soon"})")),
            "the JWT has no exp (a numeric date): a token that never expires is not accepted");
  const std::string nbf =
      R"({"sub":"a","exp":)" + std::to_string(kNow + 7200) + R"(,"nbf":)" + std::to_string(kNow + 60) + "}";
  EXPECT_EQ(check(*hs, token(nbf), kNow), "sub=a");
  EXPECT_EQ(check(*hs, token(nbf), kNow - 1), "the JWT is not valid yet (nbf)");
  JwtSettings strict;
  strict.algorithms = {JwtAlgorithm::hs256};
  strict.leeway_seconds = 0;
  auto no_leeway = JwtVerifier::load(strict, keys().dir.file("secret"), "");
  EXPECT_EQ(check(*no_leeway, token(nbf), kNow), "the JWT is not valid yet (nbf)");
  EXPECT_EQ(check(*no_leeway, token(R"({"sub":"a","exp":)" + exp + "}"), kNow), "the JWT has expired");
  EXPECT_EQ(check(*no_leeway, token(R"({"sub":"a","exp":)" + exp + "}"), kNow - 1), "sub=a");
}

TEST(Jwt, Base64urlIsDecodedStrictly) {
  auto hs = verifier({JwtAlgorithm::hs256}, "secret");
  const std::string good = jwt(R"({"alg":"HS256"})", payload(), nullptr, kSecret);
  EXPECT_EQ(check(*hs, good), "sub=alice");
  const std::string bad = "the JWT has a part that is not strict base64url";
  EXPECT_EQ(check(*hs, good + "="), bad);  // padding
  std::string plus = good;
  plus[plus.rfind('.') + 1] = '+';  // base64, not base64url
  EXPECT_EQ(check(*hs, plus), bad);
  EXPECT_EQ(check(*hs, good + "AA"), bad) << "a lone trailing character";  // 45 characters
  // The signature's last character carries 2 spare bits: set one, the bytes are the same.
  std::string spare = good;
  char& last = spare.back();
  last = last == 'A' ? 'B' : (last == 'Q' ? 'R' : (last == 'g' ? 'h' : 'x'));
  EXPECT_EQ(check(*hs, spare), bad);
  EXPECT_EQ(check(*hs, "abc.def"), "the JWT is not three base64url parts (a JWS in compact form)");
  EXPECT_EQ(check(*hs, good + ".x"), "the JWT is not three base64url parts (a JWS in compact form)");
  EXPECT_EQ(check(*hs, testutil::base64url("[1]") + "." + testutil::base64url(payload()) + ".AA"),
            "the JWT header is not a JSON object");
}

TEST(Jwt, AJwkSetChoosesTheKeyByKid) {
  auto set = verifier({JwtAlgorithm::rs256, JwtAlgorithm::es256}, "", "jwks.json");
  EXPECT_EQ(check(*set, jwt(R"({"alg":"RS256","kid":"r1"})", payload(), &keys().rsa)), "sub=alice");
  EXPECT_EQ(check(*set, jwt(R"({"alg":"ES256","kid":"e1"})", payload(), &keys().ec)), "sub=alice");
  EXPECT_EQ(check(*set, jwt(R"({"alg":"ES256","kid":"e2"})", payload(), &keys().other_ec)), "sub=alice");
  // Signed by e2's key but naming e1: e1's key is the one tried.
  EXPECT_EQ(check(*set, jwt(R"({"alg":"ES256","kid":"e1"})", payload(), &keys().other_ec)),
            "the JWT signature does not verify with any key of this gateway");
  EXPECT_EQ(check(*set, jwt(R"({"alg":"ES256","kid":"nobody"})", payload(), &keys().ec)),
            "the JWT signature does not verify with any key of this gateway");
  // Without a kid every key of the algorithm is tried.
  EXPECT_EQ(check(*set, jwt(R"({"alg":"ES256"})", payload(), &keys().other_ec)), "sub=alice");
}

TEST(Jwt, IssuerAndAudienceAreCheckedWhenNamed) {
  JwtSettings s;
  s.algorithms = {JwtAlgorithm::hs256};
  s.issuer = "https://sso.example.com/realms/shop";
  s.audience = {"orders-api", "account"};
  auto v = JwtVerifier::load(s, keys().dir.file("secret"), "");
  auto token = [&](std::string extra) { return jwt(R"({"alg":"HS256"})", payload(extra), nullptr, kSecret); };
  EXPECT_EQ(check(*v, token(R"(,"iss":"https://sso.example.com/realms/shop","aud":"orders-api")")),
            "sub=alice");
  EXPECT_EQ(check(*v, token(R"(,"iss":"https://sso.example.com/realms/shop","aud":["x","account"])")),
            "sub=alice");
  EXPECT_EQ(check(*v, token(R"(,"iss":"https://evil.example.com","aud":"orders-api")")),
            "the JWT was issued by another issuer (iss)");
  EXPECT_EQ(check(*v, token(R"(,"aud":"orders-api")")), "the JWT was issued by another issuer (iss)");
  EXPECT_EQ(check(*v, token(R"(,"iss":"https://sso.example.com/realms/shop","aud":["billing"])")),
            "the JWT is meant for another audience (aud)");
  EXPECT_EQ(check(*v, token(R"(,"iss":"https://sso.example.com/realms/shop")")),
            "the JWT is meant for another audience (aud)");
  EXPECT_EQ(check(*v, jwt(R"({"alg":"HS256"})",
                          R"({"exp":1900000000,"iss":"https://sso.example.com/realms/shop","aud":"account"})",
                          nullptr, kSecret)),
            "the JWT has no sub claim (a non-empty string or an integer)");
  EXPECT_EQ(
      check(
          *v,
          jwt(R"({"alg":"HS256"})",
              R"({"sub":"a\nb","exp":1900000000,"iss":"https://sso.example.com/realms/shop","aud":"account"})",
              nullptr, kSecret)),
      "the JWT claim sub holds control characters or is over 1024 bytes");
}

// A user id that is a JSON number (a Java service's 19-digit Snowflake id) is its exact
// decimal text; a number that is not an integer is no principal.
TEST(Jwt, AnIntegerClaimIsItsExactDigits) {
  auto v = verifier({JwtAlgorithm::hs256}, "secret");
  const auto with_sub = [](const std::string& sub) {
    return jwt(R"({"alg":"HS256"})", R"({"sub":)" + sub + R"(,"exp":)" + std::to_string(kNow + 300) + "}",
               nullptr, kSecret);
  };
  EXPECT_EQ(check(*v, with_sub("1234567890123456789")), "sub=1234567890123456789");
  EXPECT_EQ(check(*v, with_sub("18446744073709551615")), "sub=18446744073709551615");
  EXPECT_EQ(check(*v, with_sub("-42")), "sub=-42");
  EXPECT_EQ(check(*v, with_sub("1.5")), "the JWT has no sub claim (a non-empty string or an integer)");
  EXPECT_EQ(check(*v, with_sub("1e3")), "the JWT has no sub claim (a non-empty string or an integer)");
}

TEST(Jwt, KeyFilesAreCheckedWhenRead) {
  auto error = [](std::vector<JwtAlgorithm> algs, const std::string& key, const std::string& jwks = "") {
    try {
      verifier(std::move(algs), key, jwks);
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      return what.substr(what.find('\'', what.find('\'') + 1) + 1);  // past the file's name
    }
    return std::string("loaded");
  };
  testutil::write_file(keys().dir.file("short"), "too short\n");
  EXPECT_EQ(error({JwtAlgorithm::hs256}, "short"),
            ": an HS256 secret of 9 bytes; at least 32 are needed (RFC 7518, 3.2)");
  testutil::write_file(keys().dir.file("private.pem"), keys().ec.private_pem());
  EXPECT_EQ(error({JwtAlgorithm::es256}, "private.pem"),
            " holds a private key: give the public key (openssl pkey -pubout)");
  EXPECT_EQ(error({JwtAlgorithm::es256}, "missing"), "");
  EXPECT_EQ(error({JwtAlgorithm::hs256}, "../../../../../../../dev/zero"), "");  // cannot read: not a file
  EXPECT_EQ(error({JwtAlgorithm::es256}, "rsa.pem"),
            " holds no key for it (an HS256 secret, an RSA key for RS256, a P-256 key for ES256)");
  testutil::write_file(keys().dir.file("bad.json"), R"({"keys":{}})");
  EXPECT_EQ(error({JwtAlgorithm::es256}, "", "bad.json"), R"( is not a JWK Set ({"keys": [...]}))");
  EXPECT_EQ(error({JwtAlgorithm::rs256}, "rsa.pem"), "loaded");
}

// A route reads the token from its header: 401 credentials-invalid for one that does not
// verify; without one, subject: jwt refuses and principal: jwt binds no one.
TEST(Jwt, ARouteTakesItsSubjectOrPrincipalFromTheToken) {
  const std::string yaml = "jwt:\n  algorithms: [ES256]\n  key_file: " + keys().dir.file("ec.pem") + R"(
routes:
  - name: orders
    match: {method: POST, path: /orders}
    principal: jwt
  - name: carts
    match: {method: POST, path: /carts}
    subject: jwt
  - name: tenants
    match: {method: POST, path: /tenants}
    principal: jwt:tenant
)";
  const Config c = load_config_text(yaml, "jwt.yaml");
  auto identify = [&](std::string target, std::string authorization) {
    testing::TestRequest req;
    req.target = std::move(target);
    req.header("Idempotency-Key", "k-1");
    if (!authorization.empty()) req.header("Authorization", std::move(authorization));
    std::optional<RouteMatch> m = match_route(c.routes, req.method, req.target);
    Decision d = identify_request(*m, req.view());
    if (d.verdict == Verdict::reject)
      return std::to_string(problem_status(d.rejection.problem)) + " " +
             std::string(problem_name(d.rejection.problem));
    return "scope=" + d.identity.scope + " principal=" + d.identity.principal;
  };
  const auto now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  const std::string good =
      jwt(R"({"alg":"ES256"})", R"({"sub":"alice","tenant":"t-9","exp":)" + std::to_string(now + 300) + "}",
          &keys().ec);
  const std::string expired =
      jwt(R"({"alg":"ES256"})", R"({"sub":"alice","exp":)" + std::to_string(now - 3600) + "}", &keys().ec);
  EXPECT_EQ(identify("/orders", "Bearer " + good), "scope= principal=alice");
  EXPECT_EQ(identify("/orders", "bearer  " + good), "scope= principal=alice");
  EXPECT_EQ(identify("/orders", "Bearer " + expired), "401 credentials-invalid");
  EXPECT_EQ(identify("/orders", "Basic YWxpY2U6cHc="), "401 credentials-invalid");
  EXPECT_EQ(identify("/orders", ""), "scope= principal=");
  EXPECT_EQ(identify("/carts", "Bearer " + good), "scope=alice principal=");
  EXPECT_EQ(identify("/carts", "Bearer " + expired), "401 credentials-invalid");
  EXPECT_EQ(identify("/carts", ""), "401 credentials-invalid");
  EXPECT_EQ(identify("/tenants", "Bearer " + good), "scope= principal=t-9");
}

// The block's mistakes name the file, line and key, as `idem check` prints them.
TEST(Jwt, ConfigErrorsNameTheFileLineAndKey) {
  auto error = [](const std::string& yaml) {
    try {
      load_config_text(yaml, "jwt.yaml");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("ok");
  };
  const std::string ec = keys().dir.file("ec.pem");
  EXPECT_EQ(error("defaults:\n  principal: jwt\n"),
            "jwt.yaml:2: defaults.principal: jwt needs the top-level jwt block (its keys and checks)");
  EXPECT_EQ(error("routes:\n  - name: a\n    match: {method: POST, path: /a}\n    subject: jwt:tenant\n"),
            "jwt.yaml:4: routes[0].subject: jwt:tenant needs the top-level jwt block (its keys and checks)");
  EXPECT_EQ(error("jwt:\n  algorithms: [ES256, none]\n  key_file: " + ec + "\n"),
            "jwt.yaml:2: jwt.algorithms[1]: alg none (an unsigned token) is never accepted");
  EXPECT_EQ(
      error("jwt:\n  algorithms: ES256\n  key_file: " + ec + "\n  jwks_file: " + ec + "\n"),
      "jwt.yaml:3: jwt.key_file: give either key_file (a PEM public key or an HS256 secret) or jwks_file");
  EXPECT_EQ(error("jwt:\n  key_file: " + ec + "\n"), "jwt.yaml:2: jwt.algorithms: required");
  EXPECT_EQ(error("jwt:\n  algorithms: ES256\n  key_file: " + ec + "\n  leeway: 1h\n"),
            "jwt.yaml:4: jwt.leeway: must be at most 10m");
  EXPECT_EQ(error("jwt:\n  algorithms: RS256\n\n  key_file: " + ec + "\n"),
            "jwt.yaml:4: jwt.key_file: RS256 is allowed but key_file '" + ec +
                "' holds no key for it (an HS256 secret, an RSA key for RS256, a P-256 key for ES256)");
  EXPECT_EQ(error("jwt:\n  algorithms: ES256\n  key_file: " + keys().dir.file("nothing") + "\n"),
            "jwt.yaml:3: jwt.key_file: cannot read key_file '" + keys().dir.file("nothing") + "'");
  EXPECT_EQ(error("jwt:\n  algorithms: ES256\n  key_file: " + ec + "\n  clam: sub\n"),
            "jwt.yaml:4: jwt.clam: unknown key (expected one of: algorithms, key_file, jwks_file, issuer, "
            "audience, "
            "claim, leeway, header)");
  EXPECT_EQ(error("jwt:\n  algorithms: ES256\n  key_file: " + ec + "\ndefaults:\n  subject: jwt\n"), "ok");
}

}  // namespace
}  // namespace idem::gateway
