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

namespace idem::testutil {

struct Backend {
  std::string name;
  // Opens a fresh, empty store. `clock` is used by backends whose clock is controllable;
  // others ignore it. nullptr when the backend's server is not configured (the tests skip).
  std::function<std::unique_ptr<Store>(std::shared_ptr<const Clock> clock)> open;
  // True when the store judges time by the clock passed to `open`, so a test moves time
  // by advancing it; otherwise the test waits out real (short) leases.
  bool controllable_clock = false;

  friend std::ostream& operator<<(std::ostream& os, const Backend& b) { return os << b.name; }
};

// One delegate per backend (tests/testutil/backends.cpp).
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
