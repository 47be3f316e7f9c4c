// The request's context and the request log's text (request_meta.h): request-id choice,
// X-Forwarded-For, JSON escaping of hostile values.
#include "gateway/model/request_meta.h"

#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <regex>

namespace idem::gateway {
namespace {

using Views = std::vector<std::string_view>;

bool is_uuid4(std::string_view s) {
  static const std::regex uuid4("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  return std::regex_match(s.begin(), s.end(), uuid4);
}

TEST(RequestId, SaneIsOneToLimitVisibleAscii) {
  EXPECT_TRUE(is_sane_request_id("a"));
  EXPECT_TRUE(is_sane_request_id("7f8e2c1a-0b9d-4c3e-8f1a-2b3c4d5e6f70"));
  EXPECT_TRUE(is_sane_request_id(R"(a"b\c{}~!)"));
  EXPECT_TRUE(is_sane_request_id(std::string(kMaxRequestIdLength, 'x')));
  EXPECT_FALSE(is_sane_request_id(""));
  EXPECT_FALSE(is_sane_request_id(std::string(kMaxRequestIdLength + 1, 'x')));
  for (std::string_view bad : std::initializer_list<std::string_view>{
           "a b", "a\tb", "a\nb", std::string_view("a\0b", 3), "a\x7f", "caf\xc3\xa9", "\xff"})
    EXPECT_FALSE(is_sane_request_id(bad)) << bad;
}

TEST(RequestId, TheClientsOneSaneIdIsKeptOtherwiseOneIsGenerated) {
  const Views one = {"client-id-1"};
  RequestId kept = choose_request_id(one);
  EXPECT_EQ(kept.view(), "client-id-1");
  EXPECT_FALSE(kept.generated());

  const std::string too_long(kMaxRequestIdLength + 1, 'x');
  for (const Views& v : {Views{}, Views{"a", "b"}, Views{"has space"}, Views{too_long}, Views{""}}) {
    RequestId r = choose_request_id(v);
    EXPECT_TRUE(r.generated());
    EXPECT_TRUE(is_uuid4(r.view())) << r.view();
  }
}

TEST(RequestId, GeneratedIdsDiffer) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) ids.insert(std::string(RequestId::generate().view()));
  EXPECT_EQ(ids.size(), 1000u);
}

TEST(ForwardedFor, TheClientIsAppendedToWhatWasSent) {
  EXPECT_EQ(forwarded_for(Views{}, "127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(forwarded_for(Views{"1.2.3.4"}, "127.0.0.1"), "1.2.3.4, 127.0.0.1");
  EXPECT_EQ(forwarded_for(Views{"1.2.3.4, 5.6.7.8", "", "9.9.9.9"}, "::1"), "1.2.3.4, 5.6.7.8, 9.9.9.9, ::1");
}

std::string json_of(std::string_view text, std::size_t max = 1024) {
  std::string out;
  append_json_string(out, text, max);
  return out;
}

// The parsed value of the escaped text (and that it parses at all).
std::string parsed(const std::string& json) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(json, ec);
  EXPECT_FALSE(ec) << json;
  if (ec || !v.is_string()) return "(invalid)";
  return std::string(v.as_string());
}

TEST(JsonString, QuotesBackslashesAndControlsAreEscaped) {
  EXPECT_EQ(json_of(R"(/a"b\c)"), R"("/a\"b\\c")");
  EXPECT_EQ(json_of("a\nb\rc\td"), R"("a\nb\rc\td")");
  EXPECT_EQ(json_of(std::string_view("\0\x01\x1f\x7f", 4)), R"("\u0000\u0001\u001f\u007f")");
  EXPECT_EQ(parsed(json_of(R"({"x":"y"}\)")), R"({"x":"y"}\)");
  // A log line cannot be split or forged by a value: no raw newline survives.
  EXPECT_EQ(json_of("x\n{\"route\":\"fake\"}").find('\n'), std::string::npos);
}

TEST(JsonString, ValidUtf8IsKeptInvalidBytesBecomeReplacementCharacters) {
  EXPECT_EQ(json_of("/订单/café"), "\"/订单/café\"");
  EXPECT_EQ(json_of("\xf0\x9f\x98\x80"), "\"\xf0\x9f\x98\x80\"");
  const std::string fffd = "\\ufffd";
  EXPECT_EQ(json_of("a\xff"
                    "b"),
            "\"a" + fffd + "b\"");
  EXPECT_EQ(json_of("\xc3"), "\"" + fffd + "\"");                                   // cut short
  EXPECT_EQ(json_of("\xc0\xaf"), "\"" + fffd + fffd + "\"");                        // overlong '/'
  EXPECT_EQ(json_of("\xed\xa0\x80"), "\"" + fffd + fffd + fffd + "\"");             // a surrogate
  EXPECT_EQ(json_of("\xf4\x90\x80\x80"), "\"" + fffd + fffd + fffd + fffd + "\"");  // above U+10FFFF
  EXPECT_EQ(json_of("\xe2\x82"
                    "x"),
            "\"" + fffd + fffd + "x\"");
  EXPECT_EQ(parsed(json_of("a\xff\xfe"
                           "b")),
            "a\xef\xbf\xbd\xef\xbf\xbd"
            "b");
}

TEST(JsonString, LongValuesAreCutAtACharacterBoundary) {
  EXPECT_EQ(json_of("abcdef", 4), "\"abcd...\"");
  EXPECT_EQ(json_of("abcd", 4), "\"abcd\"");
  // "ab" then a 3-byte character that does not fit in 4 bytes: cut before it.
  EXPECT_EQ(json_of("ab\xe8\xae\xa2", 4), "\"ab...\"");
  EXPECT_EQ(json_of(std::string(100000, '"'), 1024).size(), 2u + 2 * 1024 + 3);
}

// Random bytes, including every troublesome one: the result always parses as one JSON
// string, holds no raw control character, and its size is bounded.
TEST(JsonString, AnyBytesGiveBoundedValidJson) {
  std::mt19937 gen(20261202);
  std::uniform_int_distribution<int> byte(0, 255), length(0, 300);
  for (int round = 0; round < 5000; ++round) {
    std::string text(static_cast<std::size_t>(length(gen)), '\0');
    for (char& c : text) c = static_cast<char>(byte(gen));
    const std::string j = json_of(text, 200);
    ASSERT_LE(j.size(), 2u + 6 * 200 + 3) << round;
    for (char c : j) ASSERT_GE(static_cast<unsigned char>(c), 0x20u) << round;
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(j, ec);
    ASSERT_FALSE(ec) << "round " << round << ": " << j;
    ASSERT_TRUE(v.is_string());
  }
}

}  // namespace
}  // namespace idem::gateway
