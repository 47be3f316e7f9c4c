// db.h on MySQL and MariaDB through MariaDB Connector/C: blocking, prepared statements
// ("$N" becomes "?"), binary results. Driver errors are translated here, once, into
// DbError kinds; the SQL differences the business code must know of are in README.md,
// "MySQL".
#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "db_connection.h"

namespace shop::detail {
namespace {

using Kind = DbError::Kind;

// Deadlocks, lock waits and (MariaDB's snapshot isolation) a row changed since it was
// read run the transaction again. The session is gone after the client library's own
// errors (CR_*: lost, gone, cannot connect; the connection is in an unknown state) and a
// server shutting down, killing it or full: the pool drops it.
Kind kind_of(unsigned code) {
  if (code == ER_DUP_ENTRY || code == ER_DUP_ENTRY_WITH_KEY_NAME) return Kind::unique_violation;
  if (code == ER_LOCK_DEADLOCK || code == ER_LOCK_WAIT_TIMEOUT || code == ER_CHECKREAD) return Kind::retry;
  if ((code >= CR_MIN_ERROR && code <= CR_MAX_ERROR) || code == ER_SERVER_SHUTDOWN ||
      code == ER_CONNECTION_KILLED || code == ER_CON_COUNT_ERROR)
    return Kind::unavailable;
  return Kind::other;
}

// Where to connect, from mysql://USER:PASS@HOST[:PORT]/DATABASE (user and password
// percent-decoded; host "localhost" means the server's default unix socket, as the client
// library has it).
struct Target {
  std::string user, password, host, database;
  unsigned port = 3306;
};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decoded(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_digit(s[i + 1]) >= 0 && hex_digit(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

Target parse(const std::string& uri) {
  auto bad = [&](const std::string& why) {
    return DbError(Kind::unavailable,
                   "mysql: " + why + " in '" + uri + "' (mysql://USER:PASS@HOST[:PORT]/DATABASE)");
  };
  std::string_view rest(uri);
  rest.remove_prefix(std::string_view("mysql://").size());
  if (rest.find('?') != std::string_view::npos) throw bad("no parameters are supported");
  Target t;
  const auto at = rest.rfind('@');
  if (at != std::string_view::npos) {
    const std::string_view userinfo = rest.substr(0, at);
    const auto colon = userinfo.find(':');
    t.user = percent_decoded(userinfo.substr(0, colon));
    if (colon != std::string_view::npos) t.password = percent_decoded(userinfo.substr(colon + 1));
    rest.remove_prefix(at + 1);
  }
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos || slash + 1 == rest.size()) throw bad("no database");
  t.database = percent_decoded(rest.substr(slash + 1));
  std::string_view hostport = rest.substr(0, slash);
  std::string_view port;
  if (hostport.starts_with('[')) {  // [v6]:port
    const auto close = hostport.find(']');
    if (close == std::string_view::npos) throw bad("an unclosed '['");
    t.host = std::string(hostport.substr(1, close - 1));
    if (close + 1 < hostport.size() && hostport[close + 1] == ':') port = hostport.substr(close + 2);
  } else {
    const auto colon = hostport.rfind(':');
    t.host = std::string(hostport.substr(0, colon));
    if (colon != std::string_view::npos) port = hostport.substr(colon + 1);
  }
  if (t.host.empty()) throw bad("no host");
  if (!port.empty()) {
    const std::string p(port);
    char* end = nullptr;
    const long n = std::strtol(p.c_str(), &end, 10);
    if (end != p.c_str() + p.size() || n < 1 || n > 65535) throw bad("a bad port");
    t.port = static_cast<unsigned>(n);
  }
  return t;
}

// "$N" as "?", outside quoted literals and names (the shop writes no backslash escapes in
// its literals); `order` gets N - 1 for each "?" in turn.
std::string with_question_marks(std::string_view sql, std::vector<std::size_t>& order) {
  std::string out;
  out.reserve(sql.size());
  char quote = 0;
  for (std::size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (quote) {
      if (c == quote) quote = 0;  // a doubled quote closes and reopens: the same in effect
      out += c;
    } else if (c == '\'' || c == '"' || c == '`') {
      quote = c;
      out += c;
    } else if (c == '$' && i + 1 < sql.size() && sql[i + 1] >= '1' && sql[i + 1] <= '9') {
      std::size_t n = 0;
      while (i + 1 < sql.size() && sql[i + 1] >= '0' && sql[i + 1] <= '9') n = n * 10 + (sql[++i] - '0');
      order.push_back(n - 1);
      out += '?';
    } else {
      out += c;
    }
  }
  return out;
}

bool integer_type(enum_field_types t) {
  return t == MYSQL_TYPE_TINY || t == MYSQL_TYPE_SHORT || t == MYSQL_TYPE_INT24 || t == MYSQL_TYPE_LONG ||
         t == MYSQL_TYPE_LONGLONG || t == MYSQL_TYPE_YEAR;
}

class MysqlDb final : public Connection {
 public:
  explicit MysqlDb(const std::string& uri) {
    // The library's global state, once per process (mysql_init would do it unsynchronized).
    static const bool initialized = mysql_library_init(0, nullptr, nullptr) == 0;
    const Target t = parse(uri);
    if (!initialized || !(conn_ = mysql_init(nullptr)))
      throw DbError(Kind::unavailable, "mysql: out of memory");
    const unsigned connect_s = 5, io_s = 30;
    mysql_options(conn_, MYSQL_OPT_CONNECT_TIMEOUT, &connect_s);
    mysql_options(conn_, MYSQL_OPT_READ_TIMEOUT, &io_s);
    mysql_options(conn_, MYSQL_OPT_WRITE_TIMEOUT, &io_s);
    mysql_options(conn_, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    // No CLIENT_FOUND_ROWS: an upsert that leaves its row alone must count 0 (db.h, exec).
    if (!mysql_real_connect(conn_, t.host.c_str(), t.user.c_str(), t.password.c_str(), t.database.c_str(),
                            t.port, nullptr, 0)) {
      const std::string why = mysql_error(conn_);
      mysql_close(conn_);
      conn_ = nullptr;
      throw DbError(Kind::unavailable,
                    "mysql: cannot connect to " + t.host + ":" + std::to_string(t.port) + ": " + why);
    }
    try {
      // READ COMMITTED as on PostgreSQL (db.h, begin); strict SQL mode, so that a value
      // that does not fit is an error, never silently cut; lock waits that end in time for
      // a retry within a client's deadline.
      simple("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
      simple("SET SESSION sql_mode = 'TRADITIONAL', SESSION innodb_lock_wait_timeout = 5");
    } catch (const DbError& e) {
      close();
      throw DbError(Kind::unavailable, std::string("mysql: cannot set up the session: ") + e.what());
    }
  }
  ~MysqlDb() override { close(); }

  Dialect dialect() const noexcept override { return Dialect::mysql; }

  std::vector<Row> query(std::string_view sql, std::initializer_list<Value> params) override {
    std::vector<Row> rows;
    run(sql, params, &rows);
    return rows;
  }
  std::int64_t exec(std::string_view sql, std::initializer_list<Value> params) override {
    return run(sql, params, nullptr);
  }

  void begin() override { simple("START TRANSACTION"); }
  void commit() override { simple("COMMIT"); }
  void rollback() noexcept override {
    if (conn_) mysql_real_query(conn_, "ROLLBACK", 8);
  }

 private:
  struct Statement {
    MYSQL_STMT* stmt;
    std::vector<std::size_t> order;  // which parameter each "?" is
  };

  void close() noexcept {
    for (auto& [sql, s] : cache_) mysql_stmt_close(s.stmt);
    cache_.clear();
    if (conn_) mysql_close(conn_);
    conn_ = nullptr;
  }

  [[noreturn]] void fail_code(unsigned code, const char* message, std::string_view sql) {
    fail(kind_of(code), "mysql: " + std::string(message) + " [" + std::to_string(code) + "] (" +
                            std::string(sql.substr(0, 60)) + ")");
  }

  // A statement without parameters or results (sessions and transactions).
  void simple(std::string_view sql) {
    if (!conn_) fail(Kind::unavailable, "mysql: not connected");
    if (mysql_real_query(conn_, sql.data(), sql.size()) != 0)
      fail_code(mysql_errno(conn_), mysql_error(conn_), sql);
  }

  Statement& prepare(std::string_view sql) {
    std::string key(sql);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    Statement s{mysql_stmt_init(conn_), {}};
    if (!s.stmt) fail(Kind::unavailable, "mysql: out of memory");
    const std::string text = with_question_marks(sql, s.order);
    if (mysql_stmt_prepare(s.stmt, text.data(), text.size()) != 0) {
      const unsigned code = mysql_stmt_errno(s.stmt);
      const std::string message = mysql_stmt_error(s.stmt);
      mysql_stmt_close(s.stmt);
      fail_code(code, message.c_str(), sql);
    }
    return cache_.emplace(std::move(key), std::move(s)).first->second;
  }

  [[noreturn]] void fail_stmt(MYSQL_STMT* stmt, std::string_view sql) {
    fail_code(mysql_stmt_errno(stmt), mysql_stmt_error(stmt), sql);
  }

  // Runs one statement; its rows into `rows` when given; returns the rows it changed.
  std::int64_t run(std::string_view sql, std::initializer_list<Value> params, std::vector<Row>* rows) {
    if (!conn_) fail(Kind::unavailable, "mysql: not connected");
    Statement& s = prepare(sql);
    std::vector<MYSQL_BIND> in(s.order.size(), MYSQL_BIND{});
    std::vector<unsigned long> lengths(s.order.size());
    for (std::size_t i = 0; i < s.order.size(); ++i) {
      if (s.order[i] >= params.size()) {
        fail(Kind::other, "mysql: $" + std::to_string(s.order[i] + 1) + " without a parameter (" +
                              std::string(sql.substr(0, 60)) + ")");
      }
      const Value& v = params.begin()[s.order[i]];
      if (const auto* n = std::get_if<std::int64_t>(&v)) {
        in[i].buffer_type = MYSQL_TYPE_LONGLONG;
        in[i].buffer = const_cast<std::int64_t*>(n);
      } else if (const auto* text = std::get_if<std::string>(&v)) {
        in[i].buffer_type = MYSQL_TYPE_STRING;
        in[i].buffer = const_cast<char*>(text->data());
        in[i].buffer_length = lengths[i] = text->size();
        in[i].length = &lengths[i];
      } else {
        in[i].buffer_type = MYSQL_TYPE_NULL;
      }
    }
    if (mysql_stmt_bind_param(s.stmt, in.data()) != 0 || mysql_stmt_execute(s.stmt) != 0)
      fail_stmt(s.stmt, sql);
    struct Free {  // the statement is left ready for its next execution, also when a fetch throws
      MYSQL_STMT* stmt;
      ~Free() { mysql_stmt_free_result(stmt); }
    } free_result{s.stmt};
    std::unique_ptr<MYSQL_RES, decltype(&mysql_free_result)> meta(mysql_stmt_result_metadata(s.stmt),
                                                                  &mysql_free_result);
    if (!meta) return static_cast<std::int64_t>(mysql_stmt_affected_rows(s.stmt));
    if (mysql_stmt_store_result(s.stmt) != 0) fail_stmt(s.stmt, sql);
    fetch(s.stmt, meta.get(), sql, rows);
    return 0;
  }

  // Integers come as integers (an unsigned one beyond int64 as its digits); everything
  // else, DECIMAL included, as its bytes. Strings are fetched at their own length.
  void fetch(MYSQL_STMT* stmt, MYSQL_RES* meta, std::string_view sql, std::vector<Row>* rows) {
    const unsigned n = mysql_num_fields(meta);
    const MYSQL_FIELD* fields = mysql_fetch_fields(meta);
    std::vector<MYSQL_BIND> out(n, MYSQL_BIND{});
    std::vector<std::int64_t> ints(n);
    std::vector<unsigned long> lengths(n);
    std::vector<my_bool> nulls(n);
    for (unsigned i = 0; i < n; ++i) {
      if (integer_type(fields[i].type)) {
        out[i].buffer_type = MYSQL_TYPE_LONGLONG;
        out[i].buffer = &ints[i];
        out[i].is_unsigned = (fields[i].flags & UNSIGNED_FLAG) != 0;
      } else {
        out[i].buffer_type = MYSQL_TYPE_STRING;  // no buffer: the length only, then fetch_column
      }
      out[i].length = &lengths[i];
      out[i].is_null = &nulls[i];
    }
    if (mysql_stmt_bind_result(stmt, out.data()) != 0) fail_stmt(stmt, sql);
    for (;;) {
      const int rc = mysql_stmt_fetch(stmt);
      if (rc == MYSQL_NO_DATA) return;
      if (rc == 1) fail_stmt(stmt, sql);
      if (!rows) continue;
      Row row;
      row.cols.reserve(n);
      for (unsigned i = 0; i < n; ++i) {
        if (nulls[i]) {
          row.cols.emplace_back(std::monostate{});
        } else if (out[i].buffer_type == MYSQL_TYPE_LONGLONG) {
          if (out[i].is_unsigned && ints[i] < 0) {
            row.cols.emplace_back(std::to_string(static_cast<std::uint64_t>(ints[i])));
          } else {
            row.cols.emplace_back(ints[i]);
          }
        } else {
          std::string text(lengths[i], '\0');
          if (!text.empty()) {
            MYSQL_BIND column{};
            column.buffer_type = MYSQL_TYPE_STRING;
            column.buffer = text.data();
            column.buffer_length = text.size();
            if (mysql_stmt_fetch_column(stmt, &column, i, 0) != 0) fail_stmt(stmt, sql);
          }
          row.cols.emplace_back(std::move(text));
        }
      }
      rows->push_back(std::move(row));
    }
  }

  MYSQL* conn_ = nullptr;
  std::unordered_map<std::string, Statement> cache_;
};

}  // namespace

std::unique_ptr<Db> open_mysql(const std::string& uri) { return std::make_unique<MysqlDb>(uri); }

}  // namespace shop::detail
