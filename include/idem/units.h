// Durations and sizes as configuration writes them (SPEC §3.1). Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "idem/clock.h"
#include "idem/status.h"

namespace idem {

// "250ms", "1.5s", "10m", "24h", "7d", or "0" alone. Digits, optionally a point and more
// digits, then the unit; nothing else (no sign, space or exponent). Rounded to the nearest
// microsecond. invalid_argument with the reason otherwise (negative, no unit, unknown unit,
// overflow).
Result<Duration> parse_duration(std::string_view text);

// "512B", "64KiB", "1MiB", "1.5MiB" (fractions are rounded down to whole bytes), or a bare
// integer of bytes. invalid_argument with the reason otherwise (negative, unknown unit,
// overflow of 64 bits).
Result<std::uint64_t> parse_size(std::string_view text);

// The duration in the largest unit that holds it exactly ("1d", "36h", "90s", "1500ms",
// "0", "-5s"); parse_duration reads back every non-negative result in whole milliseconds.
// Other durations are written in microseconds ("1500us"), a form only meant for people.
std::string format_duration(Duration d);

// Retry-After: whole seconds, rounded up, at least 1 (SPEC §3.1); 1 for zero or negative.
std::int64_t retry_after_seconds(Duration d) noexcept;

}  // namespace idem
