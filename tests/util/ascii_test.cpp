#include "util/ascii.h"

#include <gtest/gtest.h>

namespace idem::util {
namespace {

static_assert(ascii_lower('A') == 'a' && ascii_lower('Z') == 'z' && ascii_lower('a') == 'a');
static_assert(iequals("Transfer-Encoding", "transfer-encoding"));

TEST(Ascii, LowerMapsOnlyAsciiCapitals) {
  for (int i = 0; i < 256; ++i) {
    const char c = static_cast<char>(i);
    const char want = i >= 'A' && i <= 'Z' ? static_cast<char>(i + ('a' - 'A')) : c;
    EXPECT_EQ(ascii_lower(c), want) << i;
  }
}

TEST(Ascii, IequalsIgnoresAsciiCaseOnly) {
  EXPECT_TRUE(iequals("", ""));
  EXPECT_TRUE(iequals("Content-Length", "CONTENT-length"));
  EXPECT_TRUE(iequals("100-Continue", "100-continue"));
  EXPECT_FALSE(iequals("chunked", "chunke"));
  EXPECT_FALSE(iequals("chunke", "chunked"));
  EXPECT_FALSE(iequals("te", "tf"));
  // '@' and '`', '[' and '{' are 0x20 apart like letters, but are not letters.
  EXPECT_FALSE(iequals("@", "`"));
  EXPECT_FALSE(iequals("[", "{"));
  // Bytes beyond ASCII compare as they are (no Latin-1 case folding).
  EXPECT_FALSE(iequals("\xC4", "\xE4"));
  EXPECT_TRUE(iequals("\xC4x", "\xC4X"));
}

}  // namespace
}  // namespace idem::util
