// The embedded SQLite store, the default (docs/configuration.md, "Stores": sqlite:PATH[?sync=normal|full]).
#pragma once

#include <memory>
#include <string_view>

#include "idem/open.h"
#include "idem/store.h"

namespace idem::sqlite {

// `spec` is what follows "sqlite:" in the URI: a path, optionally "?sync=normal|full".
// Errors name the file and the reason (not a database, corrupt, read-only directory, ...).
Result<std::unique_ptr<Store>> open(std::string_view spec, const StoreOptions& options);

}  // namespace idem::sqlite
