#include "storm_env.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>

namespace shop::storm {

namespace fs = std::filesystem;

namespace {

std::string random_suffix(std::uint64_t seed) {
  // Unique per run even with a fixed --seed: parallel storms must not share a queue or a
  // database.
  std::mt19937_64 rng(seed ^ std::random_device{}() ^ (static_cast<std::uint64_t>(::getpid()) << 32));
  static const char* alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string s;
  for (int i = 0; i < 10; ++i) s.push_back(alphabet[std::uniform_int_distribution<int>(0, 35)(rng)]);
  return s;
}

}  // namespace

std::string with_database(const std::string& url, const std::string& database, const std::string& param) {
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) throw SetupError("--db: not a postgres:// or mysql:// URL: " + url);
  const auto query = url.find('?', scheme + 3);
  const auto slash = url.find('/', scheme + 3);
  const auto host_end = std::min(slash, query);
  std::string out = url.substr(0, host_end) + "/" + database;
  std::string params = query == std::string::npos ? std::string() : url.substr(query + 1);
  if (!param.empty()) params += (params.empty() ? "" : "&") + param;
  if (!params.empty()) out += "?" + params;
  return out;
}

Env::Env(std::string workdir, std::string server_url, std::uint64_t seed) : workdir_(std::move(workdir)) {
  std::error_code ec;
  if (workdir_.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/shop-storm-XXXXXX";
    if (!::mkdtemp(templ.data())) throw SetupError("cannot create a directory like " + templ);
    workdir_ = templ;
    own_workdir_ = true;
  } else {
    fs::create_directories(workdir_, ec);
    if (ec) throw SetupError("--workdir " + workdir_ + ": " + ec.message());
  }
  workdir_ = fs::absolute(workdir_).string();
  const std::string suffix = random_suffix(seed);
  queue_ = "order.paid." + suffix;
  try {
    if (server_url.empty()) {
      shop_db_ = "sqlite:" + path("shop.db");
      shop_store_ = "sqlite:" + path("shop-idem.db");
      gateway_store_ = "sqlite:" + path("gateway.db");
    } else {
      admin_url_ = server_url;
      database_ = "shop_storm_" + suffix;
      auto admin = Db::open(admin_url_);
      dialect_ = admin->dialect();
      admin->exec("CREATE DATABASE " + database_);
      shop_db_ = with_database(admin_url_, database_, "");
      shop_store_ = with_database(admin_url_, database_, "table_prefix=shopidem_");
      gateway_store_ = with_database(admin_url_, database_, "table_prefix=gw_");
    }
    db_ = Db::open(shop_db_);
    ensure_schema(*db_);
  } catch (const DbError& e) {
    cleanup(true);
    throw SetupError(std::string("the shop's database: ") + e.what());
  }
}

Env::~Env() { cleanup(true); }

const char* Env::database_kind() const {
  switch (dialect_) {
    case Db::Dialect::postgres:
      return "PostgreSQL";
    case Db::Dialect::mysql:
      return "MySQL";
    case Db::Dialect::sqlite:
      break;
  }
  return "SQLite";
}

std::vector<Sku> Env::seed_skus(int users, std::uint64_t seed) {
  // Each user buys 2 on average from one of 20 SKUs: demand per SKU ~ users / 10. Stocks run
  // from 30% to 150% of that, so the cheap end sells out and the total is below demand.
  std::mt19937_64 rng(seed * 7919 + 1);
  std::vector<Sku> skus;
  const double demand = users / 10.0;
  for (int i = 0; i < 20; ++i) {
    Sku s;
    s.id = "sku-" + std::to_string(i + 1);
    s.stock = std::max<std::int64_t>(1, static_cast<std::int64_t>(demand * (0.3 + 1.2 * i / 19.0)));
    s.price = 500 + 250 * std::uniform_int_distribution<int>(0, 20)(rng);
    skus.push_back(s);
  }
  try {
    transaction(*db_, [&](Db& db) {
      for (const auto& s : skus)
        db.exec("INSERT INTO t_sku (sku_id, stock, version, price, initial_stock) VALUES ($1, $2, 0, $3, $4)",
                {s.id, s.stock, s.price, s.stock});
    });
  } catch (const DbError& e) {
    throw SetupError(std::string("seeding t_sku: ") + e.what());
  }
  return skus;
}

void Env::cleanup(bool keep) {
  if (cleaned_) return;
  cleaned_ = true;
  db_.reset();
  if (!database_.empty()) {
    try {
      auto admin = Db::open(admin_url_);
      // PostgreSQL refuses while a connection is open, unless forced; MySQL has no FORCE.
      admin->exec("DROP DATABASE IF EXISTS " + database_ +
                  (dialect_ == Db::Dialect::postgres ? " WITH (FORCE)" : ""));
    } catch (const DbError& e) {
      std::fprintf(stderr, "shop-storm: could not drop database %s: %s\n", database_.c_str(), e.what());
    }
  }
  if (own_workdir_ && !keep) {
    std::error_code ec;
    fs::remove_all(workdir_, ec);
  }
}

}  // namespace shop::storm
