#include "gateway/admin/admin_access.h"

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

TEST(AdminToken, NoTokenAcceptsNothing) {
  const AdminToken none("");
  EXPECT_FALSE(none.configured());
  EXPECT_FALSE(none.accepts("Bearer "));
  EXPECT_FALSE(none.accepts("Bearer x"));
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
