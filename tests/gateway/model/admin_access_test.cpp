#include "gateway/model/admin_access.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace idem::gateway {
namespace {

TEST(AdminToken, BearerSchemeInAnyCaseAndExactlyTheToken) {
  const AdminToken token("s3cret-token");
  EXPECT_TRUE(token.configured());
  for (const char* ok :
       {"Bearer s3cret-token", "bearer s3cret-token", "BEARER s3cret-token", "Bearer   s3cret-token"})
    EXPECT_TRUE(token.accepts(ok)) << ok;
  for (const char* refused : {"", "Bearer", "Bearer ", "Bearer s3cret-tokeN", "Bearer s3cret-toke",
                              "Bearer s3cret-token2", "Bearer s3cret-token ", "Basic s3cret-token",
                              "Bearers3cret-token", "s3cret-token", "Bearer s3cret-token, Bearer x"})
    EXPECT_FALSE(token.accepts(refused)) << refused;
}

// What a browser sends once the operator has typed the token as the password: Basic with
// base64("user:token"), any user name.
TEST(AdminToken, BasicWithTheTokenAsThePassword) {
  const AdminToken token("s3cret-token");
  for (const char* ok : {"Basic YWRtaW46czNjcmV0LXRva2Vu",  // admin:s3cret-token
                         "basic YWRtaW46czNjcmV0LXRva2Vu", "BASIC   YWRtaW46czNjcmV0LXRva2Vu",
                         "Basic OnMzY3JldC10b2tlbg=="})  // an empty user name
    EXPECT_TRUE(token.accepts(ok)) << ok;
  for (const char* refused :
       {"Basic",
        "Basic ",
        "Basic czNjcmV0LXRva2Vu",              // s3cret-token, no ':'
        "Basic YTpiOnMzY3JldC10b2tlbg==",      // a:b:s3cret-token: the password is b:s3cret-token
        "Basic eDpzM2NyZXQtdG9rZW46",          // x:s3cret-token:
        "Basic OnMzY3JldC10b2tl",              // :s3cret-toke
        "Basic YWRtaW46UzNDUkVULVRPS0VO",      // admin:S3CRET-TOKEN
        "Basic YWRtaW46czNjcmV0LXRva2VuIA==",  // admin:s3cret-token + a space
        "Basic YWRtaW46czNjcmV0LXRva2VueA==",  // admin:s3cret-tokenx
        "Basic OnMzY3JldC10b2tlbg",            // unpadded
        "Basic OnMzY3JldC10b2tlbg=",           // padded short
        "Basic OnMzY3JldC10b2tlbg===",
        "Basic OnMzY3JldC10b2tlbg==\n",
        "Basic OnMzY3JldC10b2tlbg== ",
        "Basic OnMzY3JldC10b2=tlbg=",
        "Basic OnMzY3Jld C10b2tlbg==",
        "Basic OnMzY3JldC10b2tlbg-_",
        "Basic YWRtaW46czNjcmV0LXRva2Vu, Basic YWRtaW46czNjcmV0LXRva2Vu",
        "Bearer YWRtaW46czNjcmV0LXRva2Vu",
        "Basic:YWRtaW46czNjcmV0LXRva2Vu",
        "Digest YWRtaW46czNjcmV0LXRva2Vu",
        "Basic s3cret-token",
        "Basic admin:s3cret-token"})
    EXPECT_FALSE(token.accepts(refused)) << refused;
  // A token may hold ':': the password is everything after the first one.
  EXPECT_TRUE(AdminToken("to:ken").accepts("Basic dTp0bzprZW4="));  // u:to:ken
  EXPECT_FALSE(AdminToken("").accepts("Basic OnMzY3JldC10b2tlbg=="));
  EXPECT_FALSE(AdminToken("").accepts("Basic Og=="));  // ":" against no token
}

std::string base64(std::string_view in) {
  static constexpr char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 3) {
    std::uint32_t n = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<unsigned char>(in[i + 1]) << 8;
    if (i + 2 < in.size()) n |= static_cast<unsigned char>(in[i + 2]);
    out += kDigits[(n >> 18) & 63];
    out += kDigits[(n >> 12) & 63];
    out += i + 1 < in.size() ? kDigits[(n >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kDigits[n & 63] : '=';
  }
  return out;
}

// Tokens of every length and byte (':' included): Basic with the token is accepted, with a
// token one byte longer or shorter or with one byte changed is not, and random credentials
// are refused without a fault.
TEST(AdminToken, BasicRoundTripsOnRandomTokens) {
  std::mt19937 rng(20261202);
  auto random_text = [&](std::size_t size) {
    std::string t(size, '\0');
    for (char& c : t) c = static_cast<char>(rng() % 256);
    return t;
  };
  for (int i = 0; i < 2000; ++i) {
    std::string secret = random_text(1 + rng() % 80);
    if (secret.find(' ') == 0) secret[0] = 'x';
    const AdminToken token(secret);
    const std::string user = random_text(rng() % 8);
    if (user.find(':') != std::string::npos) continue;
    ASSERT_TRUE(token.accepts("Basic " + base64(user + ":" + secret))) << i;
    EXPECT_FALSE(token.accepts("Basic " + base64(user + ":" + secret + "x"))) << i;
    EXPECT_FALSE(token.accepts("Basic " + base64(user + ":" + secret.substr(0, secret.size() - 1)))) << i;
    std::string changed = secret;
    changed[rng() % changed.size()] ^= static_cast<char>(1 + rng() % 255);
    EXPECT_FALSE(token.accepts("Basic " + base64(user + ":" + changed))) << i;
    EXPECT_FALSE(token.accepts("Basic " + random_text(rng() % 40))) << i;
  }
}

TEST(AdminToken, NoTokenAcceptsNothing) {
  const AdminToken none("");
  EXPECT_FALSE(none.configured());
  EXPECT_FALSE(none.accepts("Bearer "));
  EXPECT_FALSE(none.accepts("Bearer x"));
}

// Named tokens (docs/admin.md, "Tokens and roles"): the caller is the token presented, in
// either form, with its roles; the first of two equal tokens; nothing for anything else.
TEST(AdminTokens, TheCallerIsTheTokenPresentedWithItsRoles) {
  const AdminTokens none;
  EXPECT_FALSE(none.configured());
  EXPECT_FALSE(none.match("Bearer x"));
  const AdminTokens tokens({{"svc", "svc-secret", 1}, {"ops", "ops-secret", 2}, {"dup", "svc-secret", 3}});
  EXPECT_TRUE(tokens.configured());
  const auto svc = tokens.match("Bearer svc-secret");
  ASSERT_TRUE(svc);
  EXPECT_EQ(svc->name, "svc");
  EXPECT_EQ(svc->roles, 1u);
  const auto ops = tokens.match("Basic b3BlcmF0b3I6b3BzLXNlY3JldA==");  // operator:ops-secret
  ASSERT_TRUE(ops);
  EXPECT_EQ(ops->name, "ops");
  EXPECT_EQ(ops->roles, 2u);
  for (const char* wrong :
       {"Bearer ops-secreT", "Bearer ops-secre", "Bearer ", "ops-secret", "", "Basic ops-secret"})
    EXPECT_FALSE(tokens.match(wrong)) << wrong;
}

TEST(LoopbackHost, NamesAndAddressesOfThisMachineWithOrWithoutPort) {
  for (const char* host : {"localhost", "LocalHost:9901", "127.0.0.1", "127.0.0.1:9901", "127.255.3.4:80",
                           "[::1]", "[::1]:9901", "[0:0:0:0:0:0:0:1]:1", "localhost:0", "localhost:65535"})
    EXPECT_TRUE(is_loopback_host(host)) << host;
}

TEST(LoopbackHost, EverythingElseIsForeign) {
  for (const char* host : {"evil.example",
                           "evil.example:9901",
                           "localhost.evil.example",
                           "app.localhost",
                           "localhost.",
                           "127.0.0.1.nip.io",
                           "10.0.0.1",
                           "0.0.0.0",
                           "127.1",
                           "2130706433",
                           "0x7f000001",
                           "127.000.000.001",
                           "[::ffff:127.0.0.1]",
                           "[::]",
                           "::1",
                           "[::1",
                           "localhost:",
                           "localhost:65536",
                           "localhost:99x",
                           "localhost:9901:1",
                           "127.0.0.1 ",
                           "[::1]x",
                           "evil.example@localhost"})
    EXPECT_FALSE(is_loopback_host(host)) << host;
}

std::optional<Rejection> check(std::vector<HeaderField> headers) { return check_loopback_request(headers); }

TEST(LoopbackRequest, OriginOrAForeignHostIsForbidden) {
  EXPECT_FALSE(check({}));  // HTTP/1.0 without Host: no browser sends that
  EXPECT_FALSE(check({{"Host", "127.0.0.1:9901"}, {"Content-Type", "application/json"}}));
  EXPECT_FALSE(check({{"host", "localhost"}}));
  EXPECT_FALSE(check({{"Host", ""}}));

  for (auto headers :
       {std::vector<HeaderField>{{"Host", "localhost:9901"}, {"Origin", "http://evil.example"}},
        std::vector<HeaderField>{{"origin", "null"}},
        std::vector<HeaderField>{{"Origin", "http://localhost:9901"}},
        std::vector<HeaderField>{{"Host", "evil.example"}},
        std::vector<HeaderField>{{"Host", "evil.example:9901"}},
        std::vector<HeaderField>{{"Host", "localhost"}, {"Host", "evil.example"}}}) {
    auto r = check(headers);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->problem, Problem::forbidden);
    EXPECT_FALSE(r->detail.empty());
  }
}

TEST(OwnOrigin, HttpAndExactlyTheHost) {
  EXPECT_TRUE(is_own_origin("http://127.0.0.1:9901", "127.0.0.1:9901"));
  EXPECT_TRUE(is_own_origin("http://localhost", "localhost"));
  EXPECT_TRUE(is_own_origin("HTTP://LocalHost:9901", "localhost:9901"));
  EXPECT_TRUE(is_own_origin("http://[::1]:9901", "[::1]:9901"));
  EXPECT_TRUE(is_own_origin("http://admin.example:9901", "admin.example:9901"));
  for (auto [origin, host] : std::vector<std::pair<const char*, const char*>>{
           {"http://127.0.0.1:9902", "127.0.0.1:9901"},
           {"http://127.0.0.1", "127.0.0.1:9901"},
           {"http://127.0.0.1:9901", "127.0.0.1"},
           {"https://127.0.0.1:9901", "127.0.0.1:9901"},
           {"http://localhost:9901", "127.0.0.1:9901"},
           {"http://evil.example", "127.0.0.1:9901"},
           {"http://127.0.0.1:9901.evil.example", "127.0.0.1:9901"},
           {"http://127.0.0.1:9901/", "127.0.0.1:9901"},
           {"http://", ""},
           {"null", "127.0.0.1:9901"},
           {"", "127.0.0.1:9901"},
           {"127.0.0.1:9901", "127.0.0.1:9901"},
           {"ws://127.0.0.1:9901", "127.0.0.1:9901"},
           {"http:/127.0.0.1:9901", "127.0.0.1:9901"}})
    EXPECT_FALSE(is_own_origin(origin, host)) << origin << " for " << host;
}

TEST(OriginCheck, OnlyTheListenersOwnOriginOrNone) {
  using H = std::vector<HeaderField>;
  EXPECT_FALSE(check_origin(H{}));
  EXPECT_FALSE(check_origin(H{{"Host", "admin.example:9901"}}));
  EXPECT_FALSE(check_origin(H{{"Host", "admin.example:9901"}, {"Origin", "http://admin.example:9901"}}));
  EXPECT_FALSE(check_origin(H{{"origin", "http://127.0.0.1:9901"}, {"host", "127.0.0.1:9901"}}));
  for (const H& h :
       {H{{"Host", "admin.example:9901"}, {"Origin", "https://ops.example"}},
        H{{"Host", "admin.example:9901"}, {"Origin", "null"}},
        H{{"Origin", "http://admin.example:9901"}},  // no Host to compare with
        H{{"Host", ""}, {"Origin", "http://"}},
        H{{"Host", "admin.example:9901"},
          {"Origin", "http://admin.example:9901"},
          {"Origin", "http://evil.example"}},
        H{{"Host", "admin.example:9901"}, {"Host", "evil.example"}, {"Origin", "http://evil.example"}},
        H{{"Host", "admin.example:9901"}, {"Origin", "http://admin.example:9901, http://evil.example"}}}) {
    auto r = check_origin(h);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->problem, Problem::forbidden);
  }
}

// Without a token, the page's own fetch calls pass (a loopback Host and its own Origin),
// while a rebound host name is refused even with a matching Origin.
TEST(LoopbackRequest, TheListenersOwnOriginPasses) {
  EXPECT_FALSE(check({{"Host", "127.0.0.1:9901"}, {"Origin", "http://127.0.0.1:9901"}}));
  EXPECT_FALSE(check({{"Host", "localhost:9901"}, {"Origin", "http://localhost:9901"}}));
  EXPECT_FALSE(check({{"Host", "[::1]:9901"}, {"Origin", "http://[::1]:9901"}}));
  for (auto headers :
       {std::vector<HeaderField>{{"Host", "evil.example:9901"}, {"Origin", "http://evil.example:9901"}},
        std::vector<HeaderField>{{"Host", "127.0.0.1:9901"}, {"Origin", "http://localhost:9901"}},
        std::vector<HeaderField>{{"Host", "127.0.0.1:9901"}, {"Origin", "http://127.0.0.1:9902"}},
        std::vector<HeaderField>{{"Host", "127.0.0.1:9901"}, {"Origin", "null"}}}) {
    auto r = check(headers);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->problem, Problem::forbidden);
  }
}

TEST(JsonRequest, ApplicationJsonWithParametersInAnyCase) {
  using H = std::vector<HeaderField>;
  for (const char* type : {"application/json", "Application/JSON", "application/json; charset=utf-8",
                           "application/json;charset=UTF-8", " application/json "})
    EXPECT_FALSE(check_json_request(H{{"Content-Type", type}})) << type;
  for (const char* type : {"text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded",
                           "multipart/form-data; boundary=x", "application/jsonx", "application/json5",
                           "application/problem+json", ""}) {
    auto r = check_json_request(H{{"Content-Type", type}});
    ASSERT_TRUE(r) << type;
    EXPECT_EQ(r->problem, Problem::unsupported_media_type);
  }
  EXPECT_TRUE(check_json_request(H{}));
  // Two Content-Type fields are one list value, not application/json.
  EXPECT_TRUE(check_json_request(H{{"Content-Type", "application/json"}, {"Content-Type", "text/plain"}}));
}

}  // namespace
}  // namespace idem::gateway
