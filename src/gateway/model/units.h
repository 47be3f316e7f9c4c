// Durations and sizes as configuration writes them. Pure. The gateway's, not part of the
// installed library's contract (include/idem/).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "idem/clock.h"
#include "idem/status.h"

namespace idem {

// The longest duration and the largest size a configuration may give. Bounded so that a
// typo cannot reach arithmetic that overflows: `now + retention` in microseconds, or a
// deadline in nanoseconds, stays far inside 64 bits.
inline constexpr Duration kMaxDuration = std::chrono::hours(24 * 3650);  // 3650d
inline constexpr std::uint64_t kMaxSize = std::uint64_t{1} << 30;        // 1GiB

// "250ms", "1.5s", "10m", "24h", "7d", or "0" alone. Digits, optionally a point and more
// digits, then the unit; nothing else (no sign, space or exponent). Rounded to the nearest
// microsecond, then at most kMaxDuration. invalid_argument with the reason otherwise
// (negative, no unit, unknown unit, "at most 3650d").
Result<Duration> parse_duration(std::string_view text);

// "512B", "64KiB", "1MiB", "1.5MiB", "1GiB" (fractions are rounded down to whole bytes), or
// a bare integer of bytes. KB, MB and GB are binary too (1MB is 1MiB, as nginx and Spring
// read them). At most kMaxSize. invalid_argument with the reason otherwise (negative,
// unknown unit, "at most 1GiB").
Result<std::uint64_t> parse_size(std::string_view text);

// The duration in the largest unit that holds it exactly ("1d", "36h", "90s", "1500ms",
// "0", "-5s"); parse_duration reads back every result from 0 to kMaxDuration in whole
// milliseconds. Other durations are written in microseconds ("1500us"), a form only meant
// for people.
std::string format_duration(Duration d);

// Retry-After: whole seconds, rounded up, at least 1; 1 for zero or negative. The one
// rounding of a wait for HTTP: every problem reply with Retry-After (docs/http.md).
std::int64_t retry_after_seconds(Duration d) noexcept;

}  // namespace idem
