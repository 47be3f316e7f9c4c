// parse_json_body must accept and refuse exactly what idem::canonical_json does, and give
// the same canonical form, so that template values and json fingerprints agree.
#include "gateway/json_body.h"

#include <gtest/gtest.h>

#include "core/canonical_json.h"

namespace idem::gateway {
namespace {

TEST(ParseJsonBody, AgreesWithCanonicalJson) {
  std::string deep_ok = std::string(64, '[') + std::string(64, ']');
  std::string too_deep = std::string(65, '[') + std::string(65, ']');
  for (const std::string& text : std::vector<std::string>{"{}",
                                                          "[]",
                                                          "0",
                                                          "-0",
                                                          "1.0",
                                                          "1e21",
                                                          "0.1",
                                                          "0.30000000000000004",
                                                          "123456789012345678901234567890",
                                                          "1e-400",
                                                          "1e999999999",
                                                          "1e9999999999999999999",
                                                          "\"caf\\u00e9\"",
                                                          R"({"b":1,"a":[true,false,null,"x"]})",
                                                          " {\"a\" : 1 } ",
                                                          "",
                                                          "nope",
                                                          "{\"a\":1,\"a\":2}",
                                                          "1e400",
                                                          "-1e400",
                                                          "[1,]",
                                                          "{} {}",
                                                          "\"\\ud800\"",
                                                          "\"\xFF\"",
                                                          "// c\n1",
                                                          deep_ok,
                                                          too_deep}) {
    Result<ExactJson> parsed = parse_json_body(text);
    Result<std::string> canonical = canonical_json(text);
    ASSERT_EQ(parsed.is_ok(), canonical.is_ok()) << text;
    if (parsed) {
      EXPECT_EQ(idem::canonical_json(*parsed), *canonical) << text;
    } else {
      EXPECT_EQ(parsed.status().message(), canonical.status().message()) << text;
    }
  }
}

TEST(ParseJsonBody, NumbersKeepTheirExactValue) {
  Result<ExactJson> v = parse_json_body("[0.1, 0.30000000000000004, 5e-324, 1.0, 18446744073709551617, -0]");
  ASSERT_TRUE(v.is_ok());
  const boost::json::array& a = v->root().as_array();
  EXPECT_EQ(v->number(a[0]), "0.1");
  EXPECT_EQ(v->number(a[1]), "0.30000000000000004");
  EXPECT_EQ(v->number(a[2]), "5e-324");
  EXPECT_EQ(v->number(a[3]), "1");
  EXPECT_EQ(v->number(a[4]), "18446744073709551617");
  EXPECT_EQ(v->number(a[5]), "0");
}

}  // namespace
}  // namespace idem::gateway
