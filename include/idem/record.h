// An idempotency record (docs/design.md), as `get` returns it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "idem/clock.h"

namespace idem {

// Fences never repeat for one (scope, key): each acquisition gets one greater than every
// fence handed out for that key before. Always below 2^53, so JSON-safe.
using Fence = std::uint64_t;
inline constexpr Fence kMaxFence = (Fence{1} << 53) - 1;

enum class RecordState { pending, done };

const char* to_string(RecordState s) noexcept;  // "pending" | "done"

struct Record {
  std::string scope;
  std::string key;
  RecordState state = RecordState::pending;
  Fence fence = 0;
  std::string fingerprint;               // bytes; empty matches any fingerprint
  std::optional<TimePoint> lease_until;  // pending only
  TimePoint expires_at{};                // pending: lease_until + retention; done: commit + retention
  std::string result;                    // opaque bytes, done only
  std::string owner{};                   // BeginArgs::owner of the acquisition; kept by commit

  friend bool operator==(const Record&, const Record&) = default;
};

}  // namespace idem
