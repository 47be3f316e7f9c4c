// The Redis and Redis Cluster stores (docs/stores.md; URIs in docs/configuration.md, "Stores"):
//   redis://[user:pass@]host:port[/db][?prefix=P]
//   redis-cluster://host:port[,host:port...][?prefix=P]
// Every operation is one Lua script (redis_scripts.h), atomic on the server, judged by the
// server's clock, with native expiry. Durability is the server's: a committed result
// survives a crash of Redis as far as its AOF setting (appendfsync) promises.
#pragma once

#include <memory>
#include <string_view>

#include "idem/open.h"
#include "idem/store.h"

namespace idem::redis {

// `uri` is the whole URI. Connects (and authenticates) before returning: unavailable when
// the server cannot be reached within options.op_timeout, failed_precondition when AUTH or
// SELECT is refused, invalid_argument for a malformed URI.
Result<std::unique_ptr<Store>> open(std::string_view uri, const StoreOptions& options);

}  // namespace idem::redis
