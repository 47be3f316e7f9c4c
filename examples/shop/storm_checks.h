// The storm's verdict: the invariants checked from the shop's database and from every
// answer the users recorded, each printed as one line with counts (and at most 10 of its
// failing rows).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "db.h"
#include "storm_users.h"

namespace shop::storm {

// One invariant: how many things it looked at, and what broke.
struct Check {
  std::string name;
  long checked = 0;
  std::vector<std::string> failures;
};

// Runs checks 1-7, 9 and 10 (see the storm's README section) against `db` and the
// recorded runs; check 8 (the processes) is the storm's own.
std::vector<Check> run_checks(Db& db, const Run& run);

// Prints the checks; returns the number of violations (failing rows).
long print_checks(std::ostream& out, const std::vector<Check>& checks);

// Every counter in t_stats, "name n" sorted by name.
std::vector<std::pair<std::string, std::int64_t>> read_stats(Db& db);

// Counts of orders by status, for the report.
struct OrderCounts {
  long orders = 0, paid = 0, created = 0, sold_out = 0, without_order = 0;
};
OrderCounts count_orders(Db& db, const Run& run);

}  // namespace shop::storm
