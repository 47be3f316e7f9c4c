// db.h on SQLite (the C API) and PostgreSQL (libpq, blocking, text parameters and results);
// MySQL is in db_mysql.cpp.
// Driver errors are translated here, once, into DbError kinds that tell the caller what to
// do; nothing above this file knows which database it talks to.
#include "db.h"
#include "db_connection.h"

#include <libpq-fe.h>
#include <sqlite3.h>

#include <charconv>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>

namespace shop {

std::int64_t Row::integer(std::size_t i) const {
  const Value& v = cols.at(i);
  if (const auto* n = std::get_if<std::int64_t>(&v)) return *n;
  // A PostgreSQL result of a computed column (count(*), a sum) may arrive as text.
  if (const auto* s = std::get_if<std::string>(&v)) {
    std::int64_t n = 0;
    auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), n);
    if (ec == std::errc() && end == s->data() + s->size() && !s->empty()) return n;
  }
  throw DbError(DbError::Kind::other, "column " + std::to_string(i) + " is not an integer");
}

const std::string& Row::text(std::size_t i) const {
  if (const auto* s = std::get_if<std::string>(&cols.at(i))) return *s;
  throw DbError(DbError::Kind::other, "column " + std::to_string(i) + " is not text");
}

namespace {

using Kind = DbError::Kind;
using detail::Connection;

// ---- SQLite -----------------------------------------------------------------------------

class SqliteDb final : public Connection {
 public:
  explicit SqliteDb(const std::string& path) {
    const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr); rc != SQLITE_OK) {
      std::string why = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      sqlite3_close(db_);
      db_ = nullptr;
      throw DbError(Kind::unavailable, "sqlite: cannot open " + path + ": " + why);
    }
    sqlite3_extended_result_codes(db_, 1);
    // Before the pragmas: switching to WAL needs a moment of exclusivity another process
    // may hold.
    sqlite3_busy_timeout(db_, 5000);
    try {
      query("PRAGMA journal_mode=WAL", {});
      exec("PRAGMA synchronous=FULL", {});
    } catch (const DbError& e) {
      close();
      throw DbError(Kind::unavailable, "sqlite: cannot open " + path + ": " + e.what());
    }
  }
  ~SqliteDb() override { close(); }

  Dialect dialect() const noexcept override { return Dialect::sqlite; }

  std::vector<Row> query(std::string_view sql, std::initializer_list<Value> params) override {
    std::vector<Row> rows;
    run(sql, params, &rows);
    return rows;
  }
  std::int64_t exec(std::string_view sql, std::initializer_list<Value> params) override {
    const auto before = sqlite3_total_changes64(db_);
    run(sql, params, nullptr);
    return sqlite3_total_changes64(db_) - before;
  }

  // IMMEDIATE: the write lock is taken (or SQLITE_BUSY reported, a retry) before any read.
  void begin() override { exec("BEGIN IMMEDIATE", {}); }
  void commit() override { exec("COMMIT", {}); }
  void rollback() noexcept override {
    if (db_ && !sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }

 private:
  void close() noexcept {
    for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
    cache_.clear();
    if (db_) sqlite3_close_v2(db_);
    db_ = nullptr;
  }

  [[noreturn]] void fail_rc(int rc, std::string_view sql) {
    const int primary = rc & 0xff;
    Kind kind = Kind::other;
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
      kind = Kind::retry;
    } else if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY) {
      kind = Kind::unique_violation;
    } else if (primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN || primary == SQLITE_FULL ||
               primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) {
      kind = Kind::unavailable;
    }
    fail(kind, std::string("sqlite: ") + sqlite3_errmsg(db_) + " (" + std::string(sql.substr(0, 60)) + ")");
  }

  sqlite3_stmt* prepare(std::string_view sql) {
    auto it = cache_.find(std::string(sql));
    if (it != cache_.end()) return it->second;
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
    if (rc != SQLITE_OK) fail_rc(rc, sql);
    cache_.emplace(std::string(sql), stmt);
    return stmt;
  }

  void bind(sqlite3_stmt* stmt, std::string_view sql, std::initializer_list<Value> params) {
    if (sqlite3_bind_parameter_count(stmt) != static_cast<int>(params.size())) {
      fail(Kind::other, "sqlite: parameter count differs (" + std::string(sql.substr(0, 60)) + ")");
    }
    int i = 0;
    for (const Value& v : params) {
      ++i;
      // "$N" is a named parameter to SQLite, numbered by first appearance: look it up by
      // name so that the statement may use $2 before $1, or $1 twice.
      int index = sqlite3_bind_parameter_index(stmt, ("$" + std::to_string(i)).c_str());
      if (index == 0) index = i;
      int rc = SQLITE_OK;
      if (const auto* n = std::get_if<std::int64_t>(&v)) {
        rc = sqlite3_bind_int64(stmt, index, *n);
      } else if (const auto* s = std::get_if<std::string>(&v)) {
        rc = sqlite3_bind_text(stmt, index, s->data(), static_cast<int>(s->size()), SQLITE_TRANSIENT);
      } else {
        rc = sqlite3_bind_null(stmt, index);
      }
      if (rc != SQLITE_OK) fail_rc(rc, sql);
    }
  }

  static Value column(sqlite3_stmt* stmt, int i) {
    switch (sqlite3_column_type(stmt, i)) {
      case SQLITE_NULL:
        return std::monostate{};
      case SQLITE_INTEGER:
        return static_cast<std::int64_t>(sqlite3_column_int64(stmt, i));
      default: {
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt, i));
        return std::string(p ? p : "", static_cast<std::size_t>(sqlite3_column_bytes(stmt, i)));
      }
    }
  }

  void run(std::string_view sql, std::initializer_list<Value> params, std::vector<Row>* rows) {
    if (!db_) fail(Kind::unavailable, "sqlite: connection closed");
    sqlite3_stmt* stmt = prepare(sql);
    struct Reset {  // a cached statement is left clean, also when a step throws
      sqlite3_stmt* s;
      ~Reset() {
        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
      }
    } reset{stmt};
    bind(stmt, sql, params);
    for (;;) {
      int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) return;
      if (rc != SQLITE_ROW) fail_rc(sqlite3_extended_errcode(db_), sql);
      if (!rows) continue;
      Row row;
      const int n = sqlite3_column_count(stmt);
      row.cols.reserve(static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i) row.cols.push_back(column(stmt, i));
      rows->push_back(std::move(row));
    }
  }

  sqlite3* db_ = nullptr;
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
};

// ---- PostgreSQL -------------------------------------------------------------------------

// libpq's messages span lines; the shop logs one line per error.
std::string one_line(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

class PgDb final : public Connection {
 public:
  explicit PgDb(const std::string& uri) : conn_(PQconnectdb(uri.c_str())) {
    if (!conn_ || PQstatus(conn_) != CONNECTION_OK) {
      std::string why = conn_ ? PQerrorMessage(conn_) : "out of memory";
      if (conn_) PQfinish(conn_);
      conn_ = nullptr;
      throw DbError(Kind::unavailable, "postgres: cannot connect: " + one_line(why));
    }
    // Quiet the NOTICEs of CREATE TABLE IF NOT EXISTS on stderr.
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
  }
  ~PgDb() override {
    if (conn_) PQfinish(conn_);
  }

  Dialect dialect() const noexcept override { return Dialect::postgres; }

  std::vector<Row> query(std::string_view sql, std::initializer_list<Value> params) override {
    Result r = run(sql, params);
    std::vector<Row> rows;
    const int n = PQntuples(r.get()), cols = PQnfields(r.get());
    rows.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      Row row;
      row.cols.reserve(static_cast<std::size_t>(cols));
      for (int c = 0; c < cols; ++c) row.cols.push_back(column(r.get(), i, c));
      rows.push_back(std::move(row));
    }
    return rows;
  }
  std::int64_t exec(std::string_view sql, std::initializer_list<Value> params) override {
    Result r = run(sql, params);
    const char* n = PQcmdTuples(r.get());
    return n && *n ? std::stoll(n) : 0;
  }

  void begin() override { exec("BEGIN", {}); }
  void commit() override {
    Result r = run("COMMIT", {});
    // COMMIT of a transaction an earlier error aborted "succeeds" as a ROLLBACK.
    if (std::string_view(PQcmdStatus(r.get())) == "ROLLBACK") {
      fail(Kind::other, "postgres: the transaction was aborted by an earlier error; rolled back");
    }
  }
  void rollback() noexcept override {
    if (conn_ && PQtransactionStatus(conn_) != PQTRANS_IDLE) PQclear(PQexec(conn_, "ROLLBACK"));
  }

 private:
  using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;

  // Integer columns (INT8, INT4, INT2 by their fixed OIDs) become integers; the rest text.
  static Value column(const PGresult* r, int row, int col) {
    if (PQgetisnull(r, row, col)) return std::monostate{};
    const char* p = PQgetvalue(r, row, col);
    const Oid type = PQftype(r, col);
    if (type == 20 || type == 23 || type == 21) {
      std::int64_t n = 0;
      std::string_view s(p);
      if (std::from_chars(s.data(), s.data() + s.size(), n).ec == std::errc()) return n;
    }
    return std::string(p, static_cast<std::size_t>(PQgetlength(r, row, col)));
  }

  Result run(std::string_view sql, std::initializer_list<Value> params) {
    if (!conn_) fail(Kind::unavailable, "postgres: not connected");
    std::vector<std::string> texts;
    std::vector<const char*> values;
    texts.reserve(params.size());
    for (const Value& v : params) {
      if (const auto* n = std::get_if<std::int64_t>(&v)) {
        texts.push_back(std::to_string(*n));
      } else if (const auto* s = std::get_if<std::string>(&v)) {
        texts.push_back(*s);
      } else {
        texts.emplace_back();
      }
    }
    int i = 0;
    for (const Value& v : params) {
      values.push_back(std::holds_alternative<std::monostate>(v) ? nullptr : texts[i].c_str());
      ++i;
    }
    // Parameter types are left to the server: it infers them from where they are used.
    Result r(PQexecParams(conn_, std::string(sql).c_str(), static_cast<int>(values.size()), nullptr,
                          values.data(), nullptr, nullptr, 0),
             &PQclear);
    const auto status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return r;
    fail_result(r.get(), sql);
  }

  [[noreturn]] void fail_result(const PGresult* r, std::string_view sql) {
    const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    const std::string code = state ? state : "";
    const std::string msg = one_line(r ? PQresultErrorMessage(r) : PQerrorMessage(conn_));
    Kind kind = Kind::other;
    if (PQstatus(conn_) == CONNECTION_BAD || code.starts_with("08") || code == "57P01" || code == "57P02" ||
        code == "57P03") {
      kind = Kind::unavailable;
    } else if (code == "23505") {
      kind = Kind::unique_violation;
    } else if (code == "40001" || code == "40P01" || code == "55P03") {
      kind = Kind::retry;
    }
    fail(kind, "postgres: " + msg + " [" + code + "] (" + std::string(sql.substr(0, 60)) + ")");
  }

  PGconn* conn_;
};

}  // namespace

std::unique_ptr<Db> Db::open(const std::string& uri) {
  if (uri.starts_with("sqlite:")) {
    std::string path = uri.substr(7);
    if (path.starts_with("//")) path = path.substr(2);  // sqlite://PATH, as some write it
    if (path.empty()) throw DbError(Kind::unavailable, "sqlite: no path in '" + uri + "'");
    return std::make_unique<SqliteDb>(path);
  }
  if (uri.starts_with("postgres://") || uri.starts_with("postgresql://")) return std::make_unique<PgDb>(uri);
  if (uri.starts_with("mysql://")) return detail::open_mysql(uri);
  throw DbError(Kind::unavailable,
                "unknown database URI '" + uri + "' (sqlite:PATH, postgres://... or mysql://...)");
}

// ---- the pool ---------------------------------------------------------------------------

DbPool::DbPool(std::string uri, std::size_t size) : uri_(std::move(uri)), size_(size ? size : 1) {}
DbPool::~DbPool() = default;

DbPool::Lease::Lease(Lease&& o) noexcept : pool_(o.pool_), db_(std::move(o.db_)), broken_(o.broken_) {
  o.pool_ = nullptr;
}

DbPool::Lease::~Lease() {
  if (!pool_ || !db_) return;
  const bool drop = broken_ || static_cast<detail::Connection&>(*db_).broken();
  std::lock_guard lock(pool_->mu_);
  if (drop) {
    db_.reset();
    --pool_->open_;
  } else {
    pool_->idle_.push_back(std::move(db_));
  }
  pool_->cv_.notify_one();
}

DbPool::Lease DbPool::acquire() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !idle_.empty() || open_ < size_; });
  if (!idle_.empty()) {
    auto db = std::move(idle_.back());
    idle_.pop_back();
    return Lease(this, std::move(db));
  }
  ++open_;
  lock.unlock();  // connecting may take a while; others may use idle connections meanwhile
  try {
    return Lease(this, Db::open(uri_));
  } catch (...) {
    lock.lock();
    --open_;
    cv_.notify_one();
    throw;
  }
}

// ---- helpers ----------------------------------------------------------------------------

namespace detail {
void backoff(int attempt) {
  thread_local std::mt19937 rng(std::random_device{}());
  const int cap = attempt < 6 ? 1 << attempt : 64;  // ms
  std::uniform_int_distribution<int> ms(1, cap);
  std::this_thread::sleep_for(std::chrono::milliseconds(ms(rng)));
}
}  // namespace detail

void count(Db& db, std::string_view name, std::int64_t n) {
  db.exec(by_dialect(db,
                     "INSERT INTO t_stats (name, n) VALUES ($1, $2) "
                     "ON CONFLICT (name) DO UPDATE SET n = t_stats.n + excluded.n",
                     "INSERT INTO t_stats (name, n) VALUES ($1, $2) ON DUPLICATE KEY UPDATE n = n + $2"),
          {std::string(name), n});
}

}  // namespace shop
