// Asking the service what became of a request whose outcome is unknown (docs/http.md,
// "When the service can say what happened"; docs/configuration.md, `status`): the status
// endpoint's path for a key and a fence, and what the service's answer means. Pure
// functions, tested without sockets; the pipeline makes the call (status_call.cpp).
//
// Thread safety: pure functions, safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "idem/clock.h"
#include "idem/status.h"

namespace idem::gateway {

// The response fields of a status endpoint's answer (docs/http.md, "When the service can
// say what happened").
inline constexpr std::string_view kOutcomeHeader = "Idempotency-Outcome";
inline constexpr std::string_view kOriginalStatusHeader = "Idempotency-Original-Status";

// A route's `status`: where the service answers "what became of this key".
struct StatusEndpoint {
  std::string path;  // "/orders/by-key/{key}": {key} and {fence} are replaced
  Duration timeout = std::chrono::seconds(2);
  friend bool operator==(const StatusEndpoint&, const StatusEndpoint&) = default;
};

// Why `path` cannot be a status endpoint's, or nullopt: it starts with '/', holds no
// space or control byte, and no placeholder but {key} and {fence}.
std::optional<std::string> status_path_error(std::string_view path);

// The target asked for `key` under `fence`: each placeholder replaced by its value,
// percent-encoded (unreserved bytes kept).
std::string status_target(std::string_view path, std::string_view key, std::uint64_t fence);

// What the service said.
enum class StatusReading {
  done,            // it ran: the answer is the original one, to store and replay
  never_happened,  // it never ran and never will under this claim: release, a retry runs
  unknown,         // anything else: the outcome stays unknown
};
const char* to_string(StatusReading r) noexcept;  // "done" | "never_happened" | "unknown"

// The answer read: `status` is the status endpoint's HTTP status, `outcome` its
// Idempotency-Outcome field (nullopt when absent), `original` its
// Idempotency-Original-Status field. Only definite answers count:
//   200 with `Idempotency-Outcome: done`       → done; the original status is
//       Idempotency-Original-Status (200-599; absent: 200); another value → unknown
//   404 or 410 with `Idempotency-Outcome: none` → never_happened
//   anything else (a 404 without the field: the endpoint may not exist) → unknown
struct StatusAnswer {
  StatusReading reading = StatusReading::unknown;
  unsigned original_status = 0;  // done: the status to store and replay
};
StatusAnswer read_status_answer(unsigned status, std::optional<std::string_view> outcome,
                                std::optional<std::string_view> original) noexcept;

}  // namespace idem::gateway
