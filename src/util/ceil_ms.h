// A wait written in whole milliseconds. Pure; safe for concurrent use.
#pragma once

#include <chrono>
#include <cstdint>

namespace idem::util {

// `d` in whole milliseconds, rounded up, so that a wait is never shown as shorter than it
// is: retry_after_ms in the control API's answers (docs/control-api.md), the Guard's "retry after
// N ms". Exact for every microsecond count (no overflow at microseconds::max()).
constexpr std::int64_t ceil_ms(std::chrono::microseconds d) noexcept {
  return std::chrono::ceil<std::chrono::milliseconds>(d).count();
}

}  // namespace idem::util
