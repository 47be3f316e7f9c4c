// The in-process memory store (docs/stores.md: memory:): sharded, native expiry, lost on exit.
#pragma once

#include <memory>

#include "idem/open.h"
#include "idem/store.h"

namespace idem::memory {

std::unique_ptr<Store> open(const StoreOptions& options);

}  // namespace idem::memory
