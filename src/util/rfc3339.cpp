#include "util/rfc3339.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <utility>

namespace idem::util {
namespace {

// Appends "YYYY-MM-DDTHH:MM:SS" for the second `secs` after the epoch.
void append_second(std::string& out, std::time_t secs) {
  struct Second {
    std::time_t secs = 0;
    int size = 0;  // 0: nothing formatted yet
    char text[32];
  };
  thread_local Second second;
  if (second.size == 0 || second.secs != secs) {
    std::tm tm{};
    ::gmtime_r(&secs, &tm);
    const int n =
        std::snprintf(second.text, sizeof second.text, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                      tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    second.size = std::clamp(n, 0, static_cast<int>(sizeof second.text) - 1);
    second.secs = secs;
  }
  out.append(second.text, static_cast<std::size_t>(second.size));
}

// Appends '.', `fraction` in sizeof...(I) digits, and 'Z'. One initializer: a loop of byte
// stores that the append then reads back as one word stalls on store forwarding (measured:
// 10 ns per request log timestamp instead of 6).
template <std::size_t... I>
void append_fraction(std::string& out, std::int64_t fraction, std::index_sequence<I...>) {
  constexpr std::int64_t kPowers[] = {1, 10, 100, 1'000, 10'000, 100'000};
  constexpr std::size_t kDigits = sizeof...(I);
  const char tail[] = {'.', static_cast<char>('0' + fraction / kPowers[kDigits - 1 - I] % 10)..., 'Z'};
  out.append(tail, sizeof tail);
}

// `ticks` counts 10^-kDigits seconds since the epoch.
template <std::size_t kDigits>
void append_ticks(std::string& out, std::int64_t ticks) {
  constexpr std::int64_t kPerSecond = kDigits == 3 ? 1'000 : 1'000'000;
  std::int64_t secs = ticks / kPerSecond;
  std::int64_t fraction = ticks % kPerSecond;
  if (fraction < 0) {
    fraction += kPerSecond;
    --secs;
  }
  append_second(out, static_cast<std::time_t>(secs));
  append_fraction(out, fraction, std::make_index_sequence<kDigits>());
}

}  // namespace

void append_rfc3339(std::string& out, std::chrono::sys_time<std::chrono::microseconds> t,
                    SubSecond precision) {
  const std::int64_t us = t.time_since_epoch().count();
  if (precision == SubSecond::milliseconds)
    append_ticks<3>(out, us / 1'000);  // toward zero, as duration_cast does
  else
    append_ticks<6>(out, us);
}

std::string rfc3339(std::chrono::sys_time<std::chrono::microseconds> t, SubSecond precision) {
  std::string out;
  append_rfc3339(out, t, precision);
  return out;
}

}  // namespace idem::util
