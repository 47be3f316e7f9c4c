#include "gateway/model/key.h"

#include <string>

#include <gtest/gtest.h>

namespace idem {
namespace {

using namespace std::string_literals;

::testing::AssertionResult Contains(const std::string& text, std::string_view part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

// The parsed key, or "error: " and the reason.
std::string parse(std::string_view header) {
  Result<std::string> r = parse_key_header(header);
  if (r) return *r;
  EXPECT_EQ(r.status().code(), StatusCode::invalid_argument);
  return "error: " + r.status().message();
}

TEST(IsValidKey, LengthLimits) {
  EXPECT_FALSE(is_valid_key(""));
  EXPECT_TRUE(is_valid_key("a"));
  EXPECT_TRUE(is_valid_key(std::string(255, 'k')));
  EXPECT_FALSE(is_valid_key(std::string(256, 'k')));
  EXPECT_EQ(kMaxKeyLength, 255u);
}

TEST(IsValidKey, VisibleAsciiOnly) {
  for (int c = 0; c < 256; ++c) {
    std::string key = "ab" + std::string(1, static_cast<char>(c)) + "cd";
    EXPECT_EQ(is_valid_key(key), c >= 0x21 && c <= 0x7E) << "byte " << c;
  }
  EXPECT_TRUE(is_valid_key("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"));
  EXPECT_TRUE(is_valid_key("550e8400-e29b-41d4-a716-446655440000"));
  EXPECT_FALSE(is_valid_key("a b"));
  EXPECT_FALSE(is_valid_key("caf\xC3\xA9"));
  EXPECT_FALSE(is_valid_key("a\0b"s));
}

TEST(ParseKeyHeader, PlainToken) {
  EXPECT_EQ(parse("abc"), "abc");
  EXPECT_EQ(parse("550e8400-e29b-41d4-a716-446655440000"), "550e8400-e29b-41d4-a716-446655440000");
  EXPECT_EQ(parse(std::string(255, 'k')), std::string(255, 'k'));
  EXPECT_EQ(parse("a\"b"), "a\"b");  // a quote inside a plain token is just a character
  EXPECT_EQ(parse("abc\""), "abc\"");
}

TEST(ParseKeyHeader, TrimsSpacesAndTabs) {
  EXPECT_EQ(parse("  abc"), "abc");
  EXPECT_EQ(parse("abc \t "), "abc");
  EXPECT_EQ(parse("\t \"abc\" \t"), "abc");
}

TEST(ParseKeyHeader, SfString) {
  EXPECT_EQ(parse("\"abc\""), "abc");
  EXPECT_EQ(parse(R"("a\"b")"), "a\"b");
  EXPECT_EQ(parse(R"("a\\b")"), "a\\b");
  EXPECT_EQ(parse(R"("\\\"")"), "\\\"");
  EXPECT_EQ(parse("\"" + std::string(255, 'q') + "\""), std::string(255, 'q'));
  // The limit counts the key, not its escapes.
  EXPECT_EQ(parse("\"" + std::string(200, 'q') + std::string(110, '\\') + "\""),
            std::string(200, 'q') + std::string(55, '\\'));
}

TEST(ParseKeyHeader, Empty) {
  EXPECT_EQ(parse(""), "error: key is empty");
  EXPECT_EQ(parse("   \t"), "error: key is empty");
  EXPECT_EQ(parse("\"\""), "error: key is empty");
}

TEST(ParseKeyHeader, TooLong) {
  EXPECT_EQ(parse(std::string(256, 'k')), "error: key longer than 255 characters");
  EXPECT_EQ(parse("\"" + std::string(256, 'k') + "\""), "error: key longer than 255 characters");
}

TEST(ParseKeyHeader, CharactersOutsideVisibleAscii) {
  EXPECT_TRUE(Contains(parse("a b"), "key has a character outside visible ASCII"));
  EXPECT_TRUE(Contains(parse("a\tb"), "key has a character outside visible ASCII"));
  EXPECT_TRUE(Contains(parse("caf\xC3\xA9"), "key has a character outside visible ASCII"));
  EXPECT_TRUE(Contains(parse("a\x7F"), "key has a character outside visible ASCII"));
  EXPECT_TRUE(Contains(parse("a\r\nb"), "key has a character outside visible ASCII"));
  // A space is allowed in an sf-string, but not in a key.
  EXPECT_TRUE(Contains(parse("\"a b\""), "key has a character outside visible ASCII"));
  EXPECT_TRUE(Contains(parse("\" ab\""), "key has a character outside visible ASCII"));
  // Not allowed in an sf-string at all.
  EXPECT_TRUE(Contains(parse("\"a\tb\""), "key has a character outside visible ASCII"));
  EXPECT_TRUE(Contains(parse("\"caf\xC3\xA9\""), "key has a character outside visible ASCII"));
}

TEST(ParseKeyHeader, MalformedSfString) {
  EXPECT_EQ(parse("\"abc"), "error: unterminated quoted key");
  EXPECT_EQ(parse("\""), "error: unterminated quoted key");
  EXPECT_EQ(parse(R"("abc\")"), "error: unterminated quoted key");
  EXPECT_EQ(parse(R"("abc\)"), "error: unterminated quoted key");
  EXPECT_TRUE(Contains(parse(R"("a\nb")"), "may escape only"));
  EXPECT_TRUE(Contains(parse(R"("a\'b")"), "may escape only"));
  EXPECT_TRUE(Contains(parse("\"abc\"def"), "after the closing quote"));
  EXPECT_TRUE(Contains(parse("\"abc\" \"def\""), "after the closing quote"));
  EXPECT_TRUE(Contains(parse("\"a\"\""), "after the closing quote"));
}

// Exactly one Item (RFC 8941 §3.3; the IETF draft's Idempotency-Key is an Item): a list of
// keys or a key with parameters would be read as another key by a Structured Fields parser.
TEST(ParseKeyHeader, OneItemNeitherAListNorParameters) {
  const std::string list = "error: a list of keys (a ',' outside a quoted key): send one key";
  const std::string params = "error: the key has parameters (a ';'): send the key alone";
  EXPECT_EQ(parse("a,b"), list);
  EXPECT_EQ(parse("a, b"), list);
  EXPECT_EQ(parse("a,"), list);
  EXPECT_EQ(parse(",a"), list);
  EXPECT_EQ(parse("\"a\",\"b\""), list);
  EXPECT_EQ(parse("\"a\" , b"), list);
  EXPECT_EQ(parse("abc;x=1"), params);
  EXPECT_EQ(parse("abc;x"), params);
  EXPECT_EQ(parse("\"abc\";x=1"), params);
  EXPECT_EQ(parse("\"abc\" ;x=1"), params);
  EXPECT_EQ(parse("a;b,c"), params);  // the first of the two decides the message
  // Inside an sf-string, ',' and ';' are characters of the key.
  EXPECT_EQ(parse("\"a,b\""), "a,b");
  EXPECT_EQ(parse("\"a;b=1\""), "a;b=1");
  // Firefox's keys, UUIDs and base64 keys (which no sf-token could hold) stay keys.
  EXPECT_EQ(parse("\"12345678901234567890\""), "12345678901234567890");
  EXPECT_EQ(parse("8e3f0a52-7c4b-4d8e-9f0a-1b2c3d4e5f60"), "8e3f0a52-7c4b-4d8e-9f0a-1b2c3d4e5f60");
  EXPECT_EQ(parse("dGVzdA=="), "dGVzdA==");
}

TEST(ParseKeyHeader, PlainAndQuotedAgree) {
  for (const char* key : {"abc", "order-42", "A_b.c~d", "{x}"}) {
    std::string quoted = std::string("\"").append(key).append("\"");
    EXPECT_EQ(parse(key), parse(quoted));
  }
}

}  // namespace
}  // namespace idem
