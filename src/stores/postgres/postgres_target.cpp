#include "stores/postgres/postgres_target.h"

#include <algorithm>
#include <vector>

#include "idem/store_uri.h"
#include "stores/postgres/postgres_sql.h"
#include "util/uri_query.h"

namespace idem::postgres {
namespace {

constexpr std::string_view kDefaultPrefix = "idem_";

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

struct ConninfoDeleter {
  void operator()(PQconninfoOption* o) const noexcept { PQconninfoFree(o); }
};

// Connects with our defaults first, so that the URI's own parameters win.
PGconn* start(const Target& t, Duration timeout, bool blocking) {
  const auto seconds = std::max<std::int64_t>(2, (timeout.count() + 999'999) / 1'000'000);
  const std::string connect_timeout = std::to_string(seconds);
  const char* keys[] = {"fallback_application_name", "connect_timeout", "dbname", nullptr};
  const char* values[] = {"idem", connect_timeout.c_str(), t.uri.c_str(), nullptr};
  return blocking ? PQconnectdbParams(keys, values, /*expand_dbname=*/1)
                  : PQconnectStartParams(keys, values, /*expand_dbname=*/1);
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace

PGconn* Target::connect_blocking(Duration timeout) const { return start(*this, timeout, true); }
PGconn* Target::connect_start() const { return start(*this, Duration(0), false); }

std::string Target::message(std::string_view what, std::string_view reason) const {
  // libpq's and the server's messages should not quote the password; make sure.
  std::string m = "postgres '" + where + "': ";
  m.append(what).append(": ").append(redact_secrets(trim(std::string(reason)), uri));
  return m;
}

Status Target::connect_error(PGconn* conn) const {
  const std::string reason = conn ? PQerrorMessage(conn) : "out of memory";
  std::string m = message("cannot connect", reason);
  // The server answered and refused: fix the credentials, the database or pg_hba.conf.
  // Starting up, shutting down and "too many clients" pass; retrying is right for those.
  // TLS that cannot be had as asked (sslmode, sslrootcert) is the configuration's to fix too.
  const bool refused =
      (contains(reason, "FATAL:") && !contains(reason, "starting up") && !contains(reason, "shutting down") &&
       !contains(reason, "too many") && !contains(reason, "recovery")) ||
      contains(reason, "certificate verify failed") || contains(reason, "server does not support SSL") ||
      contains(reason, "does not match host name");
  return refused ? failed_precondition(std::move(m)) : unavailable(std::move(m));
}

Status Target::statement_error(const PGresult* res, std::string_view what) const {
  const char* state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
  const std::string code = state ? state : "";
  std::string m = message(what, PQresultErrorMessage(res));
  if (!code.empty()) m += " (SQLSTATE " + code + ")";
  const std::string cls = code.substr(0, 2);
  // Transient: nothing was done (the transaction rolled back); retrying is safe.
  if (cls == "08" || cls == "40" || cls == "53" || cls == "57" || cls == "55" || cls == "58") {
    return unavailable(std::move(m));
  }
  // The database must be fixed first: missing tables or privileges, read-only.
  if (cls == "42" || cls == "25" || cls == "28" || cls == "3D") return failed_precondition(std::move(m));
  if (cls == "22" || cls == "54") return invalid_argument(std::move(m));
  return internal_error(std::move(m));
}

Result<Target> parse_target(std::string_view uri) {
  Target t;
  t.prefix = kDefaultPrefix;
  // Take table_prefix out of the query; keep every other parameter for libpq.
  const auto question = uri.find('?');
  t.uri = std::string(uri.substr(0, question));
  if (question != std::string_view::npos) {
    std::string_view query = uri.substr(question + 1);
    char sep = '?';
    while (!query.empty()) {
      const util::QueryParam param = util::next_query_param(query);
      if (param.has_value && param.name == "table_prefix") {
        t.prefix = std::string(param.value);
        continue;
      }
      if (param.has_value && param.name == "create_tables") {
        if (param.value != "true" && param.value != "false")
          return invalid_argument("postgres: create_tables is true or false, got '" +
                                  std::string(param.value) + "'");
        t.create_tables = param.value == "true";
        continue;
      }
      t.uri.push_back(sep);
      t.uri.append(param.text);
      sep = '&';
    }
  }
  if (!valid_prefix(t.prefix)) {
    return invalid_argument("postgres: table_prefix '" + t.prefix +
                            "' must be [a-z_][a-z0-9_]* and at most 40 characters");
  }

  char* raw_error = nullptr;
  std::unique_ptr<PQconninfoOption, ConninfoDeleter> options(PQconninfoParse(t.uri.c_str(), &raw_error));
  if (!options) {
    std::string reason = raw_error ? raw_error : "out of memory";
    PQfreemem(raw_error);
    // The parser may quote a piece of the URI, even the password: never print it.
    reason = redact_secrets(reason, uri);
    return invalid_argument("postgres: malformed URI: " + trim(reason));
  }
  std::string host = "localhost", port = "5432", db, user;
  for (auto* o = options.get(); o->keyword; ++o) {
    if (!o->val) continue;
    const std::string_view k = o->keyword;
    if (k == "host" || k == "hostaddr") host = o->val;
    if (k == "port") port = o->val;
    if (k == "dbname") db = o->val;
    if (k == "user") user = o->val;
  }
  if (db.empty()) db = user;
  t.where = redact_secrets(host + ":" + port + "/" + db, uri);
  return t;
}

}  // namespace idem::postgres
