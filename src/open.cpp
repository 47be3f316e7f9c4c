#include "idem/open.h"

#include <string>

#include "idem/store_uri.h"
#include "stores/memory/memory_store.h"
#include "stores/mysql/mysql_store.h"
#include "stores/postgres/postgres_store.h"
#include "stores/redis/redis_store.h"
#include "stores/redis/redis_uri.h"
#include "stores/sqlite/sqlite_store.h"

namespace idem {
namespace {

bool is_redis(std::string_view scheme) {
  return scheme == "redis" || scheme == "redis-cluster" || scheme == "redis+sentinel" || scheme == "rediss" ||
         scheme == "rediss-cluster" || scheme == "rediss+sentinel";
}

}  // namespace

Status check_redis_uri(std::string_view uri) {
  if (!is_redis(uri.substr(0, uri.find(':')))) return Status::ok();
  if (Status s = check_uri_userinfo(uri); !s) return s;
  auto config = redis::parse_uri(uri);
  return config ? Status::ok() : config.status();
}

Result<std::unique_ptr<Store>> open_store(std::string_view uri, StoreOptions options) {
  if (options.op_timeout.count() <= 0) return invalid_argument("op_timeout must be greater than 0");
  if (!options.clock) options.clock = std::make_shared<SystemClock>();

  // Messages name the URI with its passwords written ***, and only URIs whose passwords
  // every driver reads alike are opened, so that no driver quotes a piece of one.
  if (Status s = check_uri_userinfo(uri); !s) return s;
  const auto colon = uri.find(':');
  if (colon == std::string_view::npos) {
    return invalid_argument("store URI '" + redact_uri(uri) +
                            "' has no scheme (expected memory:, sqlite:PATH, redis://, "
                            "redis-cluster://, redis+sentinel://, rediss://, postgres:// or mysql://)");
  }
  const auto scheme = uri.substr(0, colon);
  const auto rest = uri.substr(colon + 1);
  if (scheme == "memory") {
    if (!rest.empty()) return invalid_argument("memory: takes no parameters, got '" + redact_uri(uri) + "'");
    return memory::open(options);
  }
  if (scheme == "sqlite") return sqlite::open(rest, options);
  if (is_redis(scheme)) return redis::open(uri, options);
  if (scheme == "postgres" || scheme == "postgresql") return postgres::open(uri, options);
  if (scheme == "mysql") return mysql::open(uri, options);
  return invalid_argument("unknown store scheme '" + std::string(scheme) + "' in '" + redact_uri(uri) + "'");
}

}  // namespace idem
