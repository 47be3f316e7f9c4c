// The helpers of src/util, row by row: each row is what a caller relies on today.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/ceil_ms.h"
#include "util/hex.h"
#include "util/percent.h"
#include "util/rfc3339.h"
#include "util/uri_query.h"

namespace idem::util {
namespace {

using namespace std::string_literals;

// --- ceil_ms.h ---

TEST(CeilMs, RoundsUpToWholeMilliseconds) {
  using std::chrono::microseconds;
  using namespace std::chrono_literals;
  static_assert(ceil_ms(1us) == 1);
  EXPECT_EQ(ceil_ms(microseconds::zero()), 0);
  EXPECT_EQ(ceil_ms(1us), 1);
  EXPECT_EQ(ceil_ms(999us), 1);
  EXPECT_EQ(ceil_ms(1ms), 1);
  EXPECT_EQ(ceil_ms(1001us), 2);
  EXPECT_EQ(ceil_ms(1500ms), 1500);
  EXPECT_EQ(ceil_ms(30s), 30000);
  EXPECT_EQ(ceil_ms(microseconds::max()), microseconds::max().count() / 1000 + 1);
}

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

// --- rfc3339.h ---

using Micros = std::chrono::sys_time<std::chrono::microseconds>;

Micros at_us(std::int64_t us) { return Micros(std::chrono::microseconds(us)); }

// Truncated, never rounded; before 1970 milliseconds are truncated toward zero first (so
// -1 µs is the epoch's .000), then the second is the one at or before the time.
TEST(Rfc3339, BothPrecisionsRowByRow) {
  struct Row {
    std::int64_t us;
    std::string_view ms, micro;
  };
  const Row rows[] = {
      {0, "1970-01-01T00:00:00.000Z", "1970-01-01T00:00:00.000000Z"},
      {1, "1970-01-01T00:00:00.000Z", "1970-01-01T00:00:00.000001Z"},
      {999, "1970-01-01T00:00:00.000Z", "1970-01-01T00:00:00.000999Z"},
      {999'999, "1970-01-01T00:00:00.999Z", "1970-01-01T00:00:00.999999Z"},
      {1'000'000, "1970-01-01T00:00:01.000Z", "1970-01-01T00:00:01.000000Z"},
      {1'800'000'000'123'456, "2027-01-15T08:00:00.123Z", "2027-01-15T08:00:00.123456Z"},
      {1'796'173'323'456'000, "2026-12-02T01:02:03.456Z", "2026-12-02T01:02:03.456000Z"},
      {1'709'251'199'999'999, "2024-02-29T23:59:59.999Z", "2024-02-29T23:59:59.999999Z"},  // leap day
      {1'709'251'200'000'000, "2024-03-01T00:00:00.000Z", "2024-03-01T00:00:00.000000Z"},
      {951'825'600'000'000, "2000-02-29T12:00:00.000Z", "2000-02-29T12:00:00.000000Z"},     // a leap century
      {-2'203'891'200'000'000, "1900-03-01T00:00:00.000Z", "1900-03-01T00:00:00.000000Z"},  // 1900 had none
      {-1, "1970-01-01T00:00:00.000Z", "1969-12-31T23:59:59.999999Z"},
      {-999, "1970-01-01T00:00:00.000Z", "1969-12-31T23:59:59.999001Z"},
      {-1'000, "1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59.999000Z"},
      {-1'001, "1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59.998999Z"},
      {-1'000'000, "1969-12-31T23:59:59.000Z", "1969-12-31T23:59:59.000000Z"},
      {-62'135'596'800'000'000, "0001-01-01T00:00:00.000Z", "0001-01-01T00:00:00.000000Z"},
      {253'402'300'799'999'999, "9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999999Z"},
      {253'402'300'800'000'000, "10000-01-01T00:00:00.000Z", "10000-01-01T00:00:00.000000Z"},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(rfc3339(at_us(r.us), SubSecond::milliseconds), r.ms) << r.us;
    EXPECT_EQ(rfc3339(at_us(r.us), SubSecond::microseconds), r.micro) << r.us;
  }
  std::string out = "time=";
  append_rfc3339(out, at_us(1'800'000'000'123'456), SubSecond::milliseconds);
  EXPECT_EQ(out, "time=2027-01-15T08:00:00.123Z");
}

// Each thread formats a second once and reuses it: times within one second, the next
// second, an earlier one again and one before the epoch each get their own text, whichever
// precision asks.
TEST(Rfc3339, SecondsAreReusedOnlyWithinTheSecond) {
  const auto ms = [](std::int64_t millis) { return rfc3339(at_us(millis * 1'000), SubSecond::milliseconds); };
  EXPECT_EQ(ms(1'796'173'323'000), "2026-12-02T01:02:03.000Z");
  EXPECT_EQ(ms(1'796'173'323'999), "2026-12-02T01:02:03.999Z");
  EXPECT_EQ(ms(1'796'173'324'007), "2026-12-02T01:02:04.007Z");
  EXPECT_EQ(ms(1'796'173'323'050), "2026-12-02T01:02:03.050Z");
  EXPECT_EQ(rfc3339(at_us(1'796'173'323'050'001), SubSecond::microseconds), "2026-12-02T01:02:03.050001Z");
  EXPECT_EQ(ms(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(ms(-1), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(rfc3339(at_us(-1), SubSecond::microseconds), "1969-12-31T23:59:59.999999Z");
  EXPECT_EQ(ms(1'800'000'000'123), "2027-01-15T08:00:00.123Z");
}

// --- uri_query.h ---

// Each parameter as "text|name|value|has_value", in order.
std::vector<std::string> params_of(std::string_view query) {
  std::vector<std::string> out;
  while (!query.empty()) {
    const QueryParam p = next_query_param(query);
    out.push_back(std::string(p.text) + "|" + std::string(p.name) + "|" + std::string(p.value) + "|" +
                  (p.has_value ? "=" : "-"));
  }
  return out;
}

TEST(UriQuery, ParametersOneAtATime) {
  using V = std::vector<std::string>;
  EXPECT_EQ(params_of(""), V{});
  EXPECT_EQ(params_of("table_prefix=p&sync=full"),
            (V{"table_prefix=p|table_prefix|p|=", "sync=full|sync|full|="}));
  EXPECT_EQ(params_of("flag"), V{"flag|flag||-"});
  EXPECT_EQ(params_of("empty="), V{"empty=|empty||="});
  EXPECT_EQ(params_of("a=b=c"), V{"a=b=c|a|b=c|="});              // the first '=' splits
  EXPECT_EQ(params_of("a=%41+"), V{"a=%41+|a|%41+|="});           // not decoded
  EXPECT_EQ(params_of("a&&b"), (V{"a|a||-", "|||-", "b|b||-"}));  // an empty one between
  EXPECT_EQ(params_of("a&"), V{"a|a||-"});                        // none after a last '&'
  EXPECT_EQ(params_of("&a"), (V{"|||-", "a|a||-"}));
}

}  // namespace
}  // namespace idem::util
