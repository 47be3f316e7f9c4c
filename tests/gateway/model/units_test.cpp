#include "gateway/model/units.h"

#include <chrono>
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

namespace idem {
namespace {

using namespace std::chrono_literals;

::testing::AssertionResult Contains(const std::string& text, std::string_view part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

// The reason `text` is refused; fails the test when it is accepted.
std::string duration_error(std::string_view text) {
  Result<Duration> r = parse_duration(text);
  if (r) {
    ADD_FAILURE() << "\"" << text << "\" accepted as " << r->count() << "us";
    return {};
  }
  EXPECT_EQ(r.status().code(), StatusCode::invalid_argument) << text;
  return r.status().message();
}

std::string size_error(std::string_view text) {
  Result<std::uint64_t> r = parse_size(text);
  if (r) {
    ADD_FAILURE() << "\"" << text << "\" accepted as " << *r;
    return {};
  }
  EXPECT_EQ(r.status().code(), StatusCode::invalid_argument) << text;
  return r.status().message();
}

Duration duration(std::string_view text) {
  Result<Duration> r = parse_duration(text);
  EXPECT_TRUE(r) << text << ": " << r.status().to_string();
  return r ? *r : Duration(-1);
}

std::uint64_t size(std::string_view text) {
  Result<std::uint64_t> r = parse_size(text);
  EXPECT_TRUE(r) << text << ": " << r.status().to_string();
  return r ? *r : ~std::uint64_t{0};
}

TEST(ParseDuration, EveryUnit) {
  EXPECT_EQ(duration("250ms"), 250ms);
  EXPECT_EQ(duration("5s"), 5s);
  EXPECT_EQ(duration("10m"), 10min);
  EXPECT_EQ(duration("24h"), 24h);
  EXPECT_EQ(duration("7d"), 7 * 24h);
}

TEST(ParseDuration, Zero) {
  EXPECT_EQ(duration("0"), Duration::zero());
  EXPECT_EQ(duration("0s"), Duration::zero());
  EXPECT_EQ(duration("0ms"), Duration::zero());
  EXPECT_EQ(duration("0.0h"), Duration::zero());
}

TEST(ParseDuration, Fractions) {
  EXPECT_EQ(duration("1.5s"), 1500ms);
  EXPECT_EQ(duration("0.5ms"), 500us);
  EXPECT_EQ(duration("0.25h"), 15min);
  EXPECT_EQ(duration("1.5d"), 36h);
  EXPECT_EQ(duration("0.001s"), 1ms);
  EXPECT_EQ(duration("0.000001s"), 1us);
  EXPECT_EQ(duration("007s"), 7s);
  EXPECT_EQ(duration("1.000000000000000000000000000001s"), 1s);
}

TEST(ParseDuration, RoundsToNearestMicrosecond) {
  EXPECT_EQ(duration("0.0004ms"), 0us);
  EXPECT_EQ(duration("0.0005ms"), 1us);  // halves round up
  EXPECT_EQ(duration("0.0015ms"), 2us);
  EXPECT_EQ(duration("0.00049999999999999999999ms"), 0us);
  EXPECT_EQ(duration("1.0000004s"), 1s);
  EXPECT_EQ(duration("1.0000005s"), 1000001us);
  // 0.3333333h is 1199999880us exactly; with more threes it rounds to 20 minutes.
  EXPECT_EQ(duration("0.3333333h"), 1199999880us);
  EXPECT_EQ(duration("0.3333333333h"), 20min);  // 1199999999.64us
}

// At most 3650d, in every unit: the exact limit is accepted, one unit (or a rounded
// microsecond) above it is refused. 106751991d, the most that 64 bits of microseconds
// hold, once overflowed `now + retention` and silently turned replay off.
TEST(ParseDuration, AtMost3650Days) {
  EXPECT_EQ(kMaxDuration, 3650 * 24h);
  EXPECT_EQ(duration("3650d"), kMaxDuration);
  EXPECT_EQ(duration("87600h"), kMaxDuration);
  EXPECT_EQ(duration("5256000m"), kMaxDuration);
  EXPECT_EQ(duration("315360000s"), kMaxDuration);
  EXPECT_EQ(duration("315360000000ms"), kMaxDuration);
  EXPECT_EQ(duration("3649.999999999999d"), kMaxDuration);  // rounds up to the limit
  EXPECT_EQ(duration("3650.000000000001d"), kMaxDuration);  // 0.0000864us above: rounds down to it
  EXPECT_EQ(duration("315359999.9999995s"), kMaxDuration);
  EXPECT_EQ(duration_error("3651d"), "duration \"3651d\": at most 3650d");
  EXPECT_EQ(duration_error("87601h"), "duration \"87601h\": at most 3650d");
  EXPECT_EQ(duration_error("5256001m"), "duration \"5256001m\": at most 3650d");
  EXPECT_EQ(duration_error("315360001s"), "duration \"315360001s\": at most 3650d");
  EXPECT_EQ(duration_error("315360000001ms"), "duration \"315360000001ms\": at most 3650d");
  EXPECT_TRUE(Contains(duration_error("3650.0000001d"), "at most 3650d"));       // 8640us above
  EXPECT_TRUE(Contains(duration_error("315360000.0000005s"), "at most 3650d"));  // rounds to 1us above
  EXPECT_TRUE(Contains(duration_error("106751991d"), "at most 3650d"));
  EXPECT_TRUE(Contains(duration_error("106751992d"), "at most 3650d"));
  EXPECT_TRUE(Contains(duration_error("99999999999999999999999s"), "at most 3650d"));
  EXPECT_TRUE(Contains(duration_error(std::string(400, '9') + "ms"), "at most 3650d"));
  EXPECT_TRUE(Contains(duration_error("3651." + std::string(400, '9') + "d"), "at most 3650d"));
}

TEST(ParseDuration, Refusals) {
  EXPECT_TRUE(Contains(duration_error(""), "empty"));
  EXPECT_TRUE(Contains(duration_error("-5s"), "negative"));
  EXPECT_TRUE(Contains(duration_error("5"), "no unit"));
  EXPECT_TRUE(Contains(duration_error("1.5"), "no unit"));
  EXPECT_TRUE(Contains(duration_error("00"), "no unit"));
  EXPECT_TRUE(Contains(duration_error("5w"), "unknown unit"));
  EXPECT_TRUE(Contains(duration_error("5S"), "unknown unit"));
  EXPECT_TRUE(Contains(duration_error("5sec"), "unknown unit"));
  EXPECT_TRUE(Contains(duration_error("5us"), "unknown unit"));
  EXPECT_TRUE(Contains(duration_error("5 s"), "unknown unit"));
  EXPECT_TRUE(Contains(duration_error("1e3ms"), "unknown unit"));
  EXPECT_TRUE(Contains(duration_error("5s5"), "unknown unit"));
  EXPECT_TRUE(Contains(duration_error("1h30m"), "unknown unit"));
  for (const char* text : {"+5s", "s", ".5s", "1.s", " 5s", "5s ", "1,5s", "0x10s", "inf", "NaN"}) {
    EXPECT_FALSE(parse_duration(text)) << text;
  }
  EXPECT_TRUE(Contains(duration_error("fast"), "\"fast\""));  // the message quotes the text
}

TEST(ParseSize, Units) {
  EXPECT_EQ(size("512B"), 512u);
  EXPECT_EQ(size("64KiB"), 64u * 1024);
  EXPECT_EQ(size("1MiB"), 1024u * 1024);
  EXPECT_EQ(size("1.5MiB"), 1536u * 1024);
  EXPECT_EQ(size("0.5KiB"), 512u);
  EXPECT_EQ(size("1GiB"), 1024u * 1024 * 1024);
  EXPECT_EQ(size("0.5GiB"), 512u * 1024 * 1024);
  EXPECT_EQ(size("0B"), 0u);
  EXPECT_EQ(size("0MiB"), 0u);
  EXPECT_EQ(size("0GB"), 0u);
}

// KB, MB and GB are binary, as nginx and Spring read them.
TEST(ParseSize, DecimalNamesAreBinary) {
  EXPECT_EQ(size("1KB"), 1024u);
  EXPECT_EQ(size("1MB"), 1048576u);
  EXPECT_EQ(size("1MB"), size("1MiB"));
  EXPECT_EQ(size("1GB"), size("1GiB"));
  EXPECT_EQ(size("64KB"), size("64KiB"));
  EXPECT_EQ(size("1.5MB"), size("1.5MiB"));
  EXPECT_EQ(size("0.1KB"), 102u);  // 102.4 bytes, rounded down
}

TEST(ParseSize, AtMost1GiB) {
  EXPECT_EQ(kMaxSize, 1024u * 1024 * 1024);
  EXPECT_EQ(size("1GiB"), kMaxSize);
  EXPECT_EQ(size("1GB"), kMaxSize);
  EXPECT_EQ(size("1024MiB"), kMaxSize);
  EXPECT_EQ(size("1048576KiB"), kMaxSize);
  EXPECT_EQ(size("1073741824B"), kMaxSize);
  EXPECT_EQ(size("1073741824"), kMaxSize);
  EXPECT_EQ(size("1.0000000001GiB"), kMaxSize);  // 1073741824.107 bytes, rounded down
  EXPECT_EQ(size_error("1025MiB"), "size \"1025MiB\": at most 1GiB");
  EXPECT_EQ(size_error("1025MB"), "size \"1025MB\": at most 1GiB");
  EXPECT_EQ(size_error("2GiB"), "size \"2GiB\": at most 1GiB");
  EXPECT_EQ(size_error("1048577KiB"), "size \"1048577KiB\": at most 1GiB");
  EXPECT_EQ(size_error("1073741825"), "size \"1073741825\": at most 1GiB");
  EXPECT_EQ(size_error("1073741825B"), "size \"1073741825B\": at most 1GiB");
  EXPECT_TRUE(Contains(size_error("1.000000001GiB"), "at most 1GiB"));  // 1073741825.07 bytes
  EXPECT_TRUE(Contains(size_error("18446744073709551615"), "at most 1GiB"));
  EXPECT_TRUE(Contains(size_error("18446744073709551616"), "at most 1GiB"));
  EXPECT_TRUE(Contains(size_error("17592186044416MiB"), "at most 1GiB"));  // 2^44 MiB = 2^64 B
  EXPECT_TRUE(Contains(size_error(std::string(400, '9') + "GiB"), "at most 1GiB"));
}

TEST(ParseSize, BareIntegerIsBytes) {
  EXPECT_EQ(size("0"), 0u);
  EXPECT_EQ(size("1"), 1u);
  EXPECT_EQ(size("1048576"), 1048576u);
  EXPECT_EQ(size("001024"), 1024u);
}

TEST(ParseSize, FractionsRoundDown) {
  EXPECT_EQ(size("1.9B"), 1u);
  EXPECT_EQ(size("0.001KiB"), 1u);   // 1.024 bytes
  EXPECT_EQ(size("0.0009KiB"), 0u);  // 0.9216 bytes
  EXPECT_EQ(size("1.99999999999999999999KiB"), 2047u);
  EXPECT_EQ(size("0.1MiB"), 104857u);  // 104857.6 bytes
}

TEST(ParseSize, Refusals) {
  EXPECT_TRUE(Contains(size_error(""), "empty"));
  EXPECT_TRUE(Contains(size_error("-1"), "negative"));
  EXPECT_TRUE(Contains(size_error("1.5"), "whole"));
  EXPECT_EQ(size_error("1kb"), "size \"1kb\": unknown unit (use B, KiB/KB, MiB/MB or GiB/GB)");
  for (const char* text : {"1kib", "1k", "1K", "1M", "1G", "1Kb", "1mb", "1gb", "1TiB", "1TB", "1b", "1KiBs",
                           "1iB", "1 MiB", "1MiB "}) {
    EXPECT_TRUE(Contains(size_error(text), "unknown unit")) << text;
  }
  for (const char* text : {"+1", "KiB", ".5KiB", "1.KiB", "1e3", " 1", "1 ", "0x10", "MB"}) {
    EXPECT_FALSE(parse_size(text)) << text;
  }
}

TEST(FormatDuration, LargestExactUnit) {
  EXPECT_EQ(format_duration(Duration::zero()), "0");
  EXPECT_EQ(format_duration(24h), "1d");
  EXPECT_EQ(format_duration(36h), "36h");
  EXPECT_EQ(format_duration(7 * 24h), "7d");
  EXPECT_EQ(format_duration(1h), "1h");
  EXPECT_EQ(format_duration(90min), "90m");
  EXPECT_EQ(format_duration(10min), "10m");
  EXPECT_EQ(format_duration(90s), "90s");
  EXPECT_EQ(format_duration(60s), "1m");
  EXPECT_EQ(format_duration(1500ms), "1500ms");
  EXPECT_EQ(format_duration(1ms), "1ms");
  EXPECT_EQ(format_duration(1500us), "1500us");
  EXPECT_EQ(format_duration(1us), "1us");
  EXPECT_EQ(format_duration(-5s), "-5s");
  EXPECT_EQ(format_duration(Duration::min()), "-9223372036854775808us");
}

TEST(FormatDuration, ParsesBack) {
  for (Duration d :
       {Duration::zero(), Duration(1ms), Duration(250ms), Duration(1500ms), Duration(59s), Duration(61s),
        Duration(10min), Duration(25h), Duration(24h), Duration(365 * 24h), kMaxDuration}) {
    Result<Duration> back = parse_duration(format_duration(d));
    ASSERT_TRUE(back) << format_duration(d);
    EXPECT_EQ(*back, d) << format_duration(d);
  }
}

TEST(RetryAfterSeconds, RoundsUpAtLeastOne) {
  EXPECT_EQ(retry_after_seconds(Duration::zero()), 1);
  EXPECT_EQ(retry_after_seconds(-5s), 1);
  EXPECT_EQ(retry_after_seconds(Duration::min()), 1);
  EXPECT_EQ(retry_after_seconds(1us), 1);
  EXPECT_EQ(retry_after_seconds(999ms), 1);
  EXPECT_EQ(retry_after_seconds(1s), 1);
  EXPECT_EQ(retry_after_seconds(1s + 1us), 2);
  EXPECT_EQ(retry_after_seconds(1500ms), 2);
  EXPECT_EQ(retry_after_seconds(2s), 2);
  EXPECT_EQ(retry_after_seconds(60s), 60);
  EXPECT_EQ(retry_after_seconds(Duration::max()), Duration::max().count() / 1000000 + 1);
}

}  // namespace
}  // namespace idem
