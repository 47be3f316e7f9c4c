// The shop's own database: its orders, stock, charges, points and outbox, on SQLite (the
// default, one file shared by the shop, the consumer and the storm's checker), PostgreSQL
// or MySQL (8.0.16 and later; MariaDB 10.2 and later). One small interface for all three, so
// the business code is written once.
//
// SQL is written once where the dialects agree: parameters are $1, $2, ... (each may appear
// more than once; MySQL gets them as "?", bound in the order they appear); BIGINT for
// numbers. SQLite and PostgreSQL share ON CONFLICT and RETURNING, which MySQL lacks: the
// few statements that need them give MySQL its own text next to the shared one (by_dialect
// below), e.g. ON DUPLICATE KEY UPDATE and LAST_INSERT_ID(expr). README.md, "MySQL", lists
// the differences.
//
// Errors are exceptions here (an example application, not the library): DbError, whose
// kind tells the caller what to do.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace shop {

class DbError : public std::runtime_error {
 public:
  enum class Kind {
    unique_violation,  // a UNIQUE or PRIMARY KEY constraint refused the write
    retry,             // SQLITE_BUSY / serialization failure / deadlock / lock wait timeout: run the
                       // transaction again
    unavailable,       // the connection broke or the server is down
    other,             // a bug: bad SQL, a CHECK constraint, ...
  };
  DbError(Kind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  Kind kind() const noexcept { return kind_; }

 private:
  Kind kind_;
};

// A parameter or a column: NULL, an integer or text.
using Value = std::variant<std::monostate, std::int64_t, std::string>;

struct Row {
  std::vector<Value> cols;
  bool is_null(std::size_t i) const { return std::holds_alternative<std::monostate>(cols.at(i)); }
  std::int64_t integer(std::size_t i) const;     // throws DbError(other) when not an integer
  const std::string& text(std::size_t i) const;  // throws DbError(other) when not text
};

// One connection. Not thread-safe: one thread at a time (DbPool hands them out).
class Db {
 public:
  // "sqlite:PATH" (WAL, busy timeout 5 s, synchronous=FULL), "postgres://..." /
  // "postgresql://...", or "mysql://USER:PASS@HOST[:PORT]/DATABASE" (utf8mb4, strict SQL
  // mode, lock waits of at most 5 s). Throws DbError(unavailable) when it cannot connect or
  // open.
  static std::unique_ptr<Db> open(const std::string& uri);
  virtual ~Db() = default;

  // For the rare statement that differs between them (schema, upserts on MySQL); see
  // by_dialect.
  enum class Dialect { sqlite, postgres, mysql };
  virtual Dialect dialect() const noexcept = 0;

  // Runs one statement; returns its rows (an empty vector for statements without any).
  virtual std::vector<Row> query(std::string_view sql, std::initializer_list<Value> params = {}) = 0;
  // Runs one statement; returns how many rows it inserted, updated or deleted. On MySQL an
  // UPDATE counts the rows it changed, not those it matched (a row set to the values it had
  // counts 0; the shop's updates always change what they match), and an INSERT ... ON
  // DUPLICATE KEY UPDATE counts 1 for an insert, 2 for an update, 0 for a row left as it was.
  virtual std::int64_t exec(std::string_view sql, std::initializer_list<Value> params = {}) = 0;

  // A write transaction: SQLite BEGIN IMMEDIATE (takes the write lock now, so a
  // read-then-write cannot deadlock), PostgreSQL BEGIN (READ COMMITTED), MySQL START
  // TRANSACTION at READ COMMITTED too: each statement sees what committed before it, as on
  // PostgreSQL (under REPEATABLE READ, MySQL's default, a plain SELECT after an insert that
  // met a concurrent duplicate would not see that duplicate).
  virtual void begin() = 0;
  virtual void commit() = 0;
  virtual void rollback() noexcept = 0;  // never throws; a no-op outside a transaction
};

// The statement text for db's dialect: `mysql` on MySQL, `sql` on SQLite and PostgreSQL.
inline std::string_view by_dialect(const Db& db, std::string_view sql, std::string_view mysql) {
  return db.dialect() == Db::Dialect::mysql ? mysql : sql;
}

// Runs fn(db) in a transaction and commits; on DbError(retry) rolls back and runs fn again
// (up to `attempts` times, with a short random backoff); any other exception rolls back
// and propagates. fn must be safe to run again (it only touches the database).
template <class Fn>
auto transaction(Db& db, Fn&& fn, int attempts = 20) -> decltype(fn(db));

// A bounded pool of connections for a multi-threaded server: acquire() blocks while all
// `size` are in use. Connections are opened lazily; a connection whose last use threw
// DbError(unavailable) is dropped and reopened on next use. Thread-safe.
class DbPool {
 public:
  DbPool(std::string uri, std::size_t size);
  ~DbPool();

  class Lease {
   public:
    Lease(Lease&&) noexcept;
    ~Lease();
    Db& operator*() const { return *db_; }
    Db* operator->() const { return db_.get(); }
    void discard() noexcept { broken_ = true; }  // close instead of returning to the pool

   private:
    friend class DbPool;
    Lease(DbPool* pool, std::unique_ptr<Db> db) : pool_(pool), db_(std::move(db)) {}
    DbPool* pool_;
    std::unique_ptr<Db> db_;
    bool broken_ = false;
  };
  Lease acquire();

 private:
  std::string uri_;
  std::size_t size_;
  std::size_t open_ = 0;
  std::vector<std::unique_ptr<Db>> idle_;
  std::mutex mu_;
  std::condition_variable cv_;
};

// Creates the shop's tables if they are missing (idempotent; safe from several processes
// at once). The schema is in schema.cpp; see README.md for what each table is for.
void ensure_schema(Db& db);

// Adds 1 to the counter `name` in t_stats (how many duplicates each layer absorbed);
// counters survive a crash of the process that counted.
void count(Db& db, std::string_view name, std::int64_t n = 1);

}  // namespace shop

// ---- implementation --------------------------------------------------------------------
namespace shop {
namespace detail {
void backoff(int attempt);  // sleeps a few ms, growing with attempt, randomized
}

template <class Fn>
auto transaction(Db& db, Fn&& fn, int attempts) -> decltype(fn(db)) {
  for (int attempt = 1;; ++attempt) {
    db.begin();
    try {
      if constexpr (std::is_void_v<decltype(fn(db))>) {
        fn(db);
        db.commit();
        return;
      } else {
        auto result = fn(db);
        db.commit();
        return result;
      }
    } catch (const DbError& e) {
      db.rollback();
      if (e.kind() != DbError::Kind::retry || attempt >= attempts) throw;
    } catch (...) {
      db.rollback();
      throw;
    }
    detail::backoff(attempt);
  }
}
}  // namespace shop
