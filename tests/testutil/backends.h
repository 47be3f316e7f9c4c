// The backends the shared store tests run against. Each backend is a small delegate: how
// to open a fresh, empty store, and whether its clock can be injected. A new backend is
// done when it passes the contract suite (tests/stores/contract_test.cpp) unchanged.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "idem/clock.h"
#include "idem/store.h"
#include "testutil/fault_proxy.h"
#include "testutil/redis_server.h"

namespace idem::testutil {

// A networked backend's server reached through a fault proxy (fault_proxy.h), for the
// failure suite (tests/stores/store_failure_test.cpp).
struct BehindProxy {
  std::unique_ptr<RedisServer> server;  // a server of the test's own, if any
  std::unique_ptr<FaultProxy> proxy;
  std::string uri;   // a fresh store's URI, through the proxy
  std::string skip;  // why the backend cannot run here (its server is not configured)
  // The server answers each statement of a batch as it runs it (MySQL's multi-statement
  // replies), so a connection cut at the first bytes of the reply may come before the
  // COMMIT ran: the outcome is unknown either way, but may be "not applied".
  bool replies_before_commit = false;
};

struct Backend {
  std::string name;
  // Opens a fresh, empty store. `clock` is used by backends whose clock is controllable;
  // others ignore it. nullptr when the backend's server is not configured (the tests skip).
  std::function<std::unique_ptr<Store>(std::shared_ptr<const Clock> clock)> open;
  // True when the store judges time by the clock passed to `open`, so a test moves time
  // by advancing it; otherwise the test waits out real (short) leases.
  bool controllable_clock = false;
  // Its server behind a fault proxy; null for the stores inside the process (memory, SQLite).
  std::function<BehindProxy()> behind_proxy = nullptr;

  friend std::ostream& operator<<(std::ostream& os, const Backend& b) { return os << b.name; }
};

// One delegate per backend (tests/testutil/backends.cpp): the one registry of the contract,
// vector, model and failure suites.
Backend memory_backend();
Backend sqlite_backend();  // a fresh file in a per-process temporary directory
// A fresh key prefix on the server named by IDEM_TEST_REDIS_URL /
// IDEM_TEST_REDIS_CLUSTER_URL (scripts/services start redis); nullptr stores when unset.
Backend redis_backend();
Backend redis_cluster_backend();

// A URI with a key prefix of its own ("?prefix=test-<pid>-<n>:") for a store that must not
// see any other's keys.
std::string with_unique_prefix(const std::string& uri);

// Fresh tables (a table_prefix of their own) in the database at IDEM_TEST_POSTGRES_URL;
// `open` returns nullptr when the variable is not set (the tests skip).
Backend postgres_backend();

// Fresh tables (a table_prefix of their own) in the database at IDEM_TEST_MYSQL_URL
// (scripts/services start mariadb); `open` returns nullptr when the variable is not set.
Backend mysql_backend();

// gtest parameter names: "memory", "sqlite", "redis", "redis_cluster", "postgres", "mysql".
inline std::string backend_name(const ::testing::TestParamInfo<Backend>& info) { return info.param.name; }

}  // namespace idem::testutil
