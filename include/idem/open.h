// Opening a store from a URI (docs/configuration.md, "Stores"):
//   memory:                      in-process, lost on exit
//   sqlite:PATH[?sync=normal|full]  embedded, durable (the default: sqlite:./idem.db)
//   redis://, redis-cluster://, redis+sentinel://, rediss://..., postgres://, mysql://  distributed
#pragma once

#include <memory>
#include <string_view>

#include "idem/clock.h"
#include "idem/status.h"
#include "idem/store.h"

namespace idem {

struct StoreOptions {
  // The clock by which in-process stores judge leases and expiry; nullptr = SystemClock.
  // Distributed stores ignore it (they use the server's clock, docs/design.md).
  std::shared_ptr<const Clock> clock;
  // How long one operation may take before it fails with deadline_exceeded/unavailable.
  Duration op_timeout = std::chrono::seconds(5);
  // How often a store without native expiry removes expired rows by itself; 0 = never
  // (callers run sweep()).
  Duration sweep_interval = std::chrono::seconds(60);
};

inline constexpr std::string_view kDefaultStoreUri = "sqlite:./idem.db";

// Errors: invalid_argument for a malformed URI or an unknown scheme; failed_precondition
// or unavailable when the backend cannot be opened (the message names the file or host
// and the reason: "not a database", "read-only directory", ...).
Result<std::unique_ptr<Store>> open_store(std::string_view uri, StoreOptions options = {});

}  // namespace idem
