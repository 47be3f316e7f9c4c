// Where a storm runs: its working directory, the shop's database and the two idem stores
// (SQLite files in the workdir, or a fresh PostgreSQL or MySQL database per run), the queue
// name, and the seeded SKUs. Setup failures throw SetupError (the storm exits 3).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "db.h"
#include "storm_users.h"

namespace shop::storm {

class SetupError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Env {
 public:
  // `workdir` empty: a fresh directory under $TMPDIR (or /tmp), removed by cleanup().
  // `server_url` empty: SQLite files in the workdir; else (postgres://... or mysql://...)
  // a database shop_storm_<random> is created on that server for the shop and both idem
  // stores (tables of their own, by table_prefix).
  Env(std::string workdir, std::string server_url, std::uint64_t seed);
  ~Env();

  const std::string& workdir() const { return workdir_; }
  const std::string& shop_db() const { return shop_db_; }
  const std::string& shop_store() const { return shop_store_; }
  const std::string& gateway_store() const { return gateway_store_; }
  const std::string& queue() const { return queue_; }
  std::string path(const std::string& name) const { return workdir_ + "/" + name; }
  // "SQLite", "PostgreSQL" or "MySQL", for the report.
  const char* database_kind() const;

  // The storm's own connection to the shop's database (schema ensured).
  Db& db() { return *db_; }

  // Creates ~20 SKUs whose total stock is below what `users` would buy, so some sell out.
  std::vector<Sku> seed_skus(int users, std::uint64_t seed);

  // Drops the server's database; removes the workdir unless `keep` (or it was given).
  void cleanup(bool keep);

 private:
  std::string workdir_;
  bool own_workdir_ = false;
  std::string admin_url_;  // the server's URL as given (PostgreSQL and MySQL)
  std::string database_;   // shop_storm_<random>
  Db::Dialect dialect_ = Db::Dialect::sqlite;
  std::string shop_db_, shop_store_, gateway_store_, queue_;
  std::unique_ptr<Db> db_;
  bool cleaned_ = false;
};

// `url` with its database replaced by `database` and `param` (k=v, may be empty) added to
// its query: postgres://u:p@h:5432/x?sslmode=disable -> postgres://u:p@h:5432/db?sslmode=disable&k=v
// (mysql://... alike).
std::string with_database(const std::string& url, const std::string& database, const std::string& param);

}  // namespace shop::storm
