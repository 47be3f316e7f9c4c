#include "stores/mysql/mysql_target.h"

#include <errmsg.h>
#include <mysqld_error.h>

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <optional>

#include "idem/store_uri.h"
#include "stores/mysql/mysql_sql.h"
#include "util/percent.h"
#include "util/uri_query.h"

namespace idem::mysql {
namespace {

constexpr std::string_view kDefaultPrefix = "idem_";

bool one_of(unsigned e, std::initializer_list<unsigned> set) {
  return std::find(set.begin(), set.end(), e) != set.end();
}

void set_flag(MYSQL* m, mysql_option option, bool on) {
  my_bool value = on ? 1 : 0;
  mysql_options(m, option, &value);
}

}  // namespace

MYSQL* Target::handle(Duration timeout, bool nonblocking) const {
  MYSQL* m = mysql_init(nullptr);
  if (m == nullptr) return nullptr;
  if (nonblocking) {
    mysql_options(m, MYSQL_OPT_NONBLOCK, nullptr);
  } else {
    const unsigned seconds =
        static_cast<unsigned>(std::max<std::int64_t>(2, (timeout.count() + 999'999) / 1'000'000));
    mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &seconds);
    // Longer than the schema lock's wait (op_timeout), so that a busy lock answers first.
    const unsigned io_seconds = seconds + 2;
    mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &io_seconds);
    mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &io_seconds);
  }
  // A URI names a TCP endpoint, also for "localhost" (which the connector would take as the
  // local unix socket).
  const unsigned protocol = MYSQL_PROTOCOL_TCP;
  mysql_options(m, MYSQL_OPT_PROTOCOL, &protocol);
  mysql_options(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  set_flag(m, MYSQL_OPT_LOCAL_INFILE, false);
  mysql_optionsv(m, MYSQL_OPT_CONNECT_ATTR_ADD, "program_name", "idem");
  // PREFERRED: TLS when the server offers it; the stricter modes insist (check_tls).
  if (ssl_mode == "PREFERRED") mysql_ssl_set(m, nullptr, nullptr, nullptr, nullptr, nullptr);
  if (ssl_mode == "REQUIRED" || ssl_mode == "VERIFY_CA" || ssl_mode == "VERIFY_IDENTITY") {
    set_flag(m, MYSQL_OPT_SSL_ENFORCE, true);
    set_flag(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, ssl_mode != "REQUIRED");
  }
  if (!ssl_ca.empty()) mysql_options(m, MYSQL_OPT_SSL_CA, ssl_ca.c_str());
  if (!ssl_cert.empty()) mysql_options(m, MYSQL_OPT_SSL_CERT, ssl_cert.c_str());
  if (!ssl_key.empty()) mysql_options(m, MYSQL_OPT_SSL_KEY, ssl_key.c_str());
  if (!server_public_key.empty()) mysql_options(m, MYSQL_SERVER_PUBLIC_KEY, server_public_key.c_str());
  return m;
}

std::string Target::message(std::string_view what, std::string_view reason) const {
  // The connector's and the server's messages should not quote the password; make sure.
  std::string m = "mysql '" + where + "': ";
  m.append(what).append(": ").append(redact_secrets(reason, uri));
  if (!password.empty()) m = redact_secrets(m, "mysql://u:" + password + "@h");
  return m;
}

Status Target::connect_error(MYSQL* conn) const {
  if (conn == nullptr) return unavailable(message("cannot connect", "out of memory"));
  const unsigned e = mysql_errno(conn);
  std::string m = message("cannot connect", mysql_error(conn)) + " (error " + std::to_string(e) + ")";
  // The server answered and refused: fix the credentials, the database, the grants or TLS.
  // Too many connections and a server shutting down pass; retrying is right for those.
  const bool refused = (e >= 1000 && e < 2000 && !one_of(e, {ER_CON_COUNT_ERROR, ER_SERVER_SHUTDOWN})) ||
                       one_of(e, {CR_AUTH_PLUGIN_CANNOT_LOAD, CR_SSL_CONNECTION_ERROR}) || e >= 3000;
  return refused ? failed_precondition(std::move(m)) : unavailable(std::move(m));
}

Status Target::check_tls(MYSQL* conn) const {
  const bool required = ssl_mode == "REQUIRED" || ssl_mode == "VERIFY_CA" || ssl_mode == "VERIFY_IDENTITY";
  if (!required || mysql_get_ssl_cipher(conn) != nullptr) return Status::ok();
  return failed_precondition(
      message("cannot connect", "ssl_mode=" + ssl_mode + " asks for TLS, and the server offers none"));
}

bool retryable(unsigned e) { return e == ER_LOCK_DEADLOCK || e == ER_LOCK_WAIT_TIMEOUT; }
bool client_error(unsigned e) { return e >= CR_MIN_ERROR && e <= CR_MAX_ERROR; }

Status Target::statement_error(MYSQL* conn, std::string_view what) const {
  const unsigned e = mysql_errno(conn);
  std::string m = message(what, mysql_error(conn)) + " (error " + std::to_string(e) + ", SQLSTATE " +
                  mysql_sqlstate(conn) + ")";
  // Transient: nothing was done (the transaction rolled back); retrying is safe.
  if (retryable(e) || client_error(e) ||
      one_of(e,
             {ER_CON_COUNT_ERROR, ER_SERVER_SHUTDOWN, ER_QUERY_INTERRUPTED, 1927 /* connection killed */})) {
    return unavailable(std::move(m));
  }
  // The database must be fixed first: missing tables or privileges, read-only, binlog format.
  if (one_of(e,
             {ER_NO_SUCH_TABLE, ER_TABLEACCESS_DENIED_ERROR, ER_COLUMNACCESS_DENIED_ERROR,
              ER_DBACCESS_DENIED_ERROR, ER_BAD_DB_ERROR, ER_OPTION_PREVENTS_STATEMENT,
              ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION, ER_SPECIFIC_ACCESS_DENIED_ERROR, ER_BAD_FIELD_ERROR,
              1665 /* binlog_format STATEMENT with READ COMMITTED */, 1836 /* read-only mode */})) {
    return failed_precondition(std::move(m));
  }
  // The call's values do not fit: a scope too long, a lease so long that now + lease overflows.
  if (one_of(e, {ER_DATA_TOO_LONG, ER_WARN_DATA_OUT_OF_RANGE, ER_DATA_OUT_OF_RANGE, ER_TRUNCATED_WRONG_VALUE,
                 ER_NET_PACKET_TOO_LARGE})) {
    return invalid_argument(std::move(m));
  }
  return internal_error(std::move(m));
}

Result<Target> parse_target(std::string_view uri) {
  Target t;
  t.uri = std::string(uri);
  t.prefix = kDefaultPrefix;
  auto bad = [&](std::string_view why) {
    return invalid_argument("mysql: malformed URI '" + redact_uri(uri) + "': " + std::string(why));
  };
  constexpr std::string_view kScheme = "mysql://";
  if (uri.substr(0, kScheme.size()) != kScheme) return bad("expected mysql://");
  std::string_view rest = uri.substr(kScheme.size());
  std::string_view query;
  if (const auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    const auto colon = userinfo.find(':');
    auto user = util::percent_decode(userinfo.substr(0, colon), util::BadPercent::reject);
    auto password = util::percent_decode(colon == std::string_view::npos ? "" : userinfo.substr(colon + 1),
                                         util::BadPercent::reject);
    if (!user || !password) return bad("a '%' in the user information must start a %XX escape");
    t.user = std::move(*user);
    t.password = std::move(*password);
  }
  std::string_view hostport = rest.substr(0, rest.find('/'));
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    auto db = util::percent_decode(rest.substr(slash + 1), util::BadPercent::reject);
    if (!db) return bad("a '%' in the database name must start a %XX escape");
    t.db = std::move(*db);
  }
  std::string_view port;
  if (!hostport.empty() && hostport[0] == '[') {
    const auto close = hostport.find(']');
    if (close == std::string_view::npos) return bad("an IPv6 address lacks its ']'");
    t.host = std::string(hostport.substr(1, close - 1));
    if (close + 1 < hostport.size()) {
      if (hostport[close + 1] != ':') return bad("expected ':' after ']'");
      port = hostport.substr(close + 2);
    }
  } else {
    const auto colon = hostport.rfind(':');
    t.host = std::string(hostport.substr(0, colon));
    if (colon != std::string_view::npos) port = hostport.substr(colon + 1);
  }
  if (t.host.empty()) return bad("no host");
  if (!port.empty()) {
    unsigned p = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc() || end != port.data() + port.size() || p == 0 || p > 65535)
      return bad("a bad port");
    t.port = p;
  }
  while (!query.empty()) {
    const util::QueryParam param = util::next_query_param(query);
    const std::string_view name = param.name;
    auto value = util::percent_decode(param.value, util::BadPercent::reject);
    if (!value) return bad("a '%' in a parameter must start a %XX escape");
    if (name == "table_prefix") {
      t.prefix = *value;
    } else if (name == "ssl_mode") {
      std::string mode = *value;
      std::transform(mode.begin(), mode.end(), mode.begin(), [](unsigned char c) { return std::toupper(c); });
      if (mode != "DISABLED" && mode != "PREFERRED" && mode != "REQUIRED" && mode != "VERIFY_CA" &&
          mode != "VERIFY_IDENTITY") {
        return bad("ssl_mode is one of DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY");
      }
      t.ssl_mode = mode;
    } else if (name == "ssl_ca") {
      t.ssl_ca = *value;
    } else if (name == "ssl_cert") {
      t.ssl_cert = *value;
    } else if (name == "ssl_key") {
      t.ssl_key = *value;
    } else if (name == "server_public_key") {
      t.server_public_key = *value;
    } else if (name == "create_tables") {
      if (*value != "true" && *value != "false") return bad("create_tables is true or false");
      t.create_tables = *value == "true";
    } else {
      return bad(
          "unknown parameter '" + std::string(name) +
          "' (known: table_prefix, ssl_mode, ssl_ca, ssl_cert, ssl_key, server_public_key, create_tables)");
    }
  }
  if (!valid_prefix(t.prefix)) {
    return invalid_argument("mysql: table_prefix '" + t.prefix +
                            "' must be [a-z_][a-z0-9_]* and at most 40 characters");
  }
  t.where = redact_secrets(t.host + ":" + std::to_string(t.port) + "/" + t.db, uri);
  return t;
}

}  // namespace idem::mysql
