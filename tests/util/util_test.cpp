// The helpers of src/util, row by row: each row is what a caller relies on today.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "util/hex.h"

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

}  // namespace
}  // namespace idem::util
