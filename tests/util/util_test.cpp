// The helpers of src/util, row by row: each row is what a caller relies on today.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>

#include "util/hex.h"
#include "util/percent.h"

namespace idem::util {
namespace {

using namespace std::string_literals;

// --- hex.h ---

static_assert(hex_value('0') == 0 && hex_value('f') == 15 && hex_value('F') == 15 && hex_value('g') == -1);
static_assert(lower_hex_value('a') == 10 && lower_hex_value('A') == -1);

TEST(Hex, ValueOfEveryByte) {
  for (int i = 0; i < 256; ++i) {
    const char c = static_cast<char>(i);
    int want = -1;
    if (i >= '0' && i <= '9') want = i - '0';
    if (i >= 'a' && i <= 'f') want = i - 'a' + 10;
    if (i >= 'A' && i <= 'F') want = i - 'A' + 10;
    EXPECT_EQ(hex_value(c), want) << i;
    EXPECT_EQ(lower_hex_value(c), i >= 'A' && i <= 'F' ? -1 : want) << i;
  }
}

TEST(Hex, ValueOfEachClassOfChar) {
  struct Row {
    char c;
    int value, lower_value;
  };
  const Row rows[] = {
      {'0', 0, 0},   {'9', 9, 9},   {'a', 10, 10},  {'f', 15, 15},    {'A', 10, -1},    {'F', 15, -1},
      {'g', -1, -1}, {'G', -1, -1}, {'/', -1, -1},  {':', -1, -1},    {'@', -1, -1},    {'`', -1, -1},
      {'%', -1, -1}, {' ', -1, -1}, {'\0', -1, -1}, {'\x7f', -1, -1}, {'\xff', -1, -1}, {'\xc1', -1, -1},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(hex_value(r.c), r.value) << static_cast<int>(r.c);
    EXPECT_EQ(lower_hex_value(r.c), r.lower_value) << static_cast<int>(r.c);
  }
}

TEST(Hex, EncodesEveryByteInLowercase) {
  EXPECT_EQ(to_hex(""), "");
  EXPECT_EQ(to_hex("\x00\x01\x7f\x80\xab\xff"s), "00017f80abff");
  EXPECT_EQ(to_hex("AZ"), "415a");
  std::string out = "X'";
  append_hex(out, "\x0f\xf0"s);
  EXPECT_EQ(out, "X'0ff0");
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  const std::string hex = to_hex(all);
  ASSERT_EQ(hex.size(), 512u);
  for (int i = 0; i < 256; ++i) {
    EXPECT_EQ(lower_hex_value(hex[2 * i]) * 16 + lower_hex_value(hex[2 * i + 1]), i) << i;
  }
}

// --- percent.h ---

static_assert(escaped_byte("%2F", 0) == 0x2F && escaped_byte("%2f", 0) == 0x2F &&
              escaped_byte("a%5c", 1) == 0x5C);
static_assert(escaped_byte("%00", 0) == 0 && escaped_byte("%ff", 0) == 255);
static_assert(escaped_byte("%2", 0) == -1 && escaped_byte("x2F", 0) == -1 && escaped_byte("%2F", 1) == -1);
static_assert(escaped_byte("%2F", 3) == -1 && escaped_byte("", 0) == -1 && escaped_byte("%g0", 0) == -1);

std::string shown(const std::optional<std::string>& s) { return s ? '"' + *s + '"' : "nullopt"; }

// Each input under the three ways callers decode: kept (paths, store URI redaction), kept
// with '+' as space (forms and queries), rejected (store URIs given to drivers).
TEST(Percent, EachPolicyRowByRow) {
  struct Row {
    std::string_view text;
    std::string keep, keep_plus_space;
    std::optional<std::string> reject;
  };
  const std::optional<std::string> refused;
  const Row rows[] = {
      {"", "", "", ""},
      {"abc", "abc", "abc", "abc"},
      {"%41", "A", "A", "A"},
      {"%4a%4A", "JJ", "JJ", "JJ"},
      {"%00", "\0"s, "\0"s, "\0"s},
      {"a%00b", "a\0b"s, "a\0b"s, "a\0b"s},
      {"%ff%FE%80", "\xff\xfe\x80", "\xff\xfe\x80", "\xff\xfe\x80"},
      {"%2F%2f", "//", "//", "//"},
      {"%2541", "%41", "%41", "%41"},  // decoded once
      {"%", "%", "%", refused},
      {"100%", "100%", "100%", refused},
      {"%4", "%4", "%4", refused},
      {"a%4", "a%4", "a%4", refused},
      {"%zz", "%zz", "%zz", refused},
      {"%4z", "%4z", "%4z", refused},
      {"%z4", "%z4", "%z4", refused},
      {"%g0%41", "%g0A", "%g0A", refused},  // what follows a kept '%' is still decoded
      {"%%41", "%A", "%A", refused},
      {"%%", "%%", "%%", refused},
      {"+", "+", " ", "+"},
      {"a+b%20c", "a+b c", "a b c", "a+b c"},
      {"%2B", "+", "+", "+"},
      {"%+", "%+", "% ", refused},
      {"%%2B+", "%++", "%+ ", refused},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(shown(percent_decode(r.text, BadPercent::keep)), shown(r.keep)) << r.text;
    EXPECT_EQ(shown(percent_decode(r.text, BadPercent::keep, Plus::space)), shown(r.keep_plus_space))
        << r.text;
    EXPECT_EQ(shown(percent_decode(r.text, BadPercent::reject)), shown(r.reject)) << r.text;
  }
}

// Every byte, escaped in both cases, decodes to itself under either policy.
TEST(Percent, EveryByteRoundTrips) {
  for (int i = 0; i < 256; ++i) {
    const std::string lower = "%" + to_hex(std::string(1, static_cast<char>(i)));
    std::string upper = lower;
    for (char& c : upper) c = c >= 'a' && c <= 'f' ? static_cast<char>(c - 'a' + 'A') : c;
    const std::string want(1, static_cast<char>(i));
    EXPECT_EQ(percent_decode(lower, BadPercent::reject), want) << lower;
    EXPECT_EQ(percent_decode(upper, BadPercent::reject), want) << upper;
    EXPECT_EQ(percent_decode(upper, BadPercent::keep, Plus::space), want) << upper;
  }
}

}  // namespace
}  // namespace idem::util
