// RFC 3339 timestamps in UTC ("2026-12-02T01:02:03.456Z"), as the request log and the admin
// API write them. Safe for concurrent use.
#pragma once

#include <chrono>
#include <string>

namespace idem::util {

// How many digits of the second's fraction are written.
enum class SubSecond {
  milliseconds,  // ".456": the request log
  microseconds,  // ".456789": the admin API's records
};

// Appends `t` as "YYYY-MM-DDTHH:MM:SS" in UTC (the year as printf's %04d writes it), the
// fraction of the second and "Z". The fraction is truncated, never rounded: with
// milliseconds, `t` is first truncated toward zero to whole milliseconds (so 1 µs before
// 1970 prints as the epoch itself), then split into the second at or before it and the
// milliseconds after. Each thread formats a second once and reuses the text while times stay
// in that second: gmtime_r and snprintf cost more than the rest of a request log line
// (docs/performance.md).
void append_rfc3339(std::string& out, std::chrono::sys_time<std::chrono::microseconds> t,
                    SubSecond precision);

// What append_rfc3339 appends.
std::string rfc3339(std::chrono::sys_time<std::chrono::microseconds> t, SubSecond precision);

}  // namespace idem::util
