// The rig of the store-outage tests (store_outage_e2e_test, fault_storm_e2e_test): `idem
// serve` in front of a test upstream of its own, and store servers that the test starts on
// ports of its own and then breaks for real (a PostgreSQL it restarts, a MariaDB it shuts
// down and starts again, a Redis made read-only through redis-cli).
#pragma once

#include <pwd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "e2e/e2e_fixture.h"
#include "testutil/eventually.h"

namespace idem::e2e {

using OutageClock = std::chrono::steady_clock;

inline std::string unique_key(const char* what) {
  static std::atomic<int> n{0};
  return std::string(what) + "-" + std::to_string(::getpid()) + "-" + std::to_string(++n);
}

inline long long millis(OutageClock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ---- the gateway and the upstream ---------------------------------------------------------

// The upstream and one `idem serve` with one protected route, `orders`: a 60 s lease (a claim
// left behind outlives the test), duplicates wait up to 2 s for the first.
constexpr const char* kOrdersConfig = R"(defaults:
  lease: 60s
  wait: 2s
  upstream_timeout: 5s
routes:
  - name: orders
    match: { method: POST, path: /orders }
)";

class Gateway {
 public:
  // `config`: the defaults and routes after the listeners and the store. With
  // `clock_file`, the gateway runs under libfaketime reading its wall clock's offset from
  // that file (under_libfaketime).
  Gateway(const std::string& dir, const std::string& store, const std::string& config = kOrdersConfig,
          const std::string& clock_file = "")
      : upstream_({IDEM_TEST_UPSTREAM}, dir + "/upstream.log", true) {
    write_file(dir + "/idem.yaml", config_head(port_, upstream_.port(), admin_, store) + config);
    std::vector<std::string> argv{IDEM_BIN, "serve", "--config", dir + "/idem.yaml"};
    if (!clock_file.empty()) argv = under_libfaketime(std::move(argv), "", clock_file);
    idem_ = std::make_unique<Process>(argv, dir + "/idem.log");
    started_ = wait_healthy(admin_, 10000);
  }

  bool started() const { return started_; }

  Response post(const std::string& key, Headers extra = {}) const {
    extra.emplace_back("Idempotency-Key", key);
    return post_to("/orders", key, std::move(extra));
  }
  // A POST to `path` whose body names `key` (the test upstream echoes it).
  Response post_to(const std::string& path, const std::string& key, Headers extra = {},
                   std::chrono::milliseconds timeout = std::chrono::seconds(10)) const {
    extra.emplace_back("Content-Type", "application/json");
    return request(port_, verb::post, path, extra, body_of(key), timeout);
  }
  // The body post_to sends for `key`.
  static std::string body_of(const std::string& key) { return R"({"key":")" + key + "\"}"; }
  unsigned short port() const { return port_; }
  unsigned short admin_port() const { return admin_; }
  // The `idem serve` process (to stop and continue it).
  const Process& process() const { return *idem_; }

  // The record of `key` on route orders as the admin API shows it (null when absent).
  json::value record(const std::string& key) const {
    Response r = request(admin_, verb::get, "/v1/records/_/" + key + "?key_space=orders");
    return r.result_int() == 200 ? body_json(r) : json::value(nullptr);
  }

  // "absent", "pending", "done", or "error <status>" when the admin API could not tell.
  std::string record_state(const std::string& key) const {
    Response r = request(admin_, verb::get, "/v1/records/_/" + key + "?key_space=orders");
    if (r.result_int() == 404) return "absent";
    const auto record = body_json(r);
    if (r.result_int() != 200 || !record.contains("state")) return "error " + std::to_string(r.result_int());
    return std::string(record.at("state").as_string());
  }

  std::uint64_t store_errors() const {
    const std::string metrics = request(admin_, verb::get, "/metrics").body();
    const std::string name = "\nidem_store_errors_total ";
    const auto at = metrics.find(name);
    return at == std::string::npos ? 0 : std::stoull(metrics.substr(at + name.size()));
  }

  // Every request the upstream executed, as GET /_seen?from=0 lists them.
  json::array seen() const {
    return json::parse(request(upstream_.port(), verb::get, "/_seen?from=0").body()).as_array();
  }
  // How many times the upstream ran each key, from its log of requests.
  std::map<std::string, int> executions() const {
    std::map<std::string, int> runs;
    for (const auto& r : seen())
      for (const auto& f : r.as_object().at("fields").as_array())
        if (f.as_array()[0].as_string() == "Idempotency-Key")
          ++runs[std::string(f.as_array()[1].as_string())];
    return runs;
  }
  // How many requests the upstream saw in all.
  std::size_t upstream_requests() const { return seen().size(); }

 private:
  Process upstream_;
  unsigned short port_ = free_port();
  unsigned short admin_ = free_port();
  std::unique_ptr<Process> idem_;
  bool started_ = false;
};

inline bool replayed(const Response& r) { return header(r, "Idempotent-Replayed") == "true"; }

inline int execution_of(const Response& r) {
  const auto o = body_json(r);
  return o.contains("execution") ? static_cast<int>(o.at("execution").as_int64()) : 0;
}

// ---- servers of the test's own -------------------------------------------------------------

inline const char* const kRedisServer = "/usr/bin/redis-server";
inline const char* const kRedisCli = "/usr/bin/redis-cli";

inline std::string redis_cli(unsigned short port, std::vector<std::string> args) {
  args.insert(args.begin(), {kRedisCli, "-p", std::to_string(port)});
  std::string out;
  run(args, &out);
  return out;
}

// Runs a command as `user` when the test is root (initdb refuses root; mariadbd is run so).
inline int as_user(const char* user, std::vector<std::string> argv, std::string* out = nullptr) {
  if (::geteuid() == 0) argv.insert(argv.begin(), {"runuser", "-u", user, "--"});
  return run(argv, out);
}

// Gives `dir` to `user` when the test is root; false when there is no such user.
inline bool give_to(const char* user, const std::string& dir) {
  if (::geteuid() != 0) return true;
  const passwd* pw = ::getpwnam(user);
  return pw && ::chown(dir.c_str(), pw->pw_uid, pw->pw_gid) == 0;
}

inline const char* const kPgBin = "/usr/lib/postgresql/15/bin";

// A throwaway PostgreSQL 15 cluster in a temporary directory, on a free loopback port, with
// trust authentication (only this test can reach it). Stopped with the object.
class PostgresServer {
 public:
  // A primary; `conf` is appended to its postgresql.conf (synchronous_standby_names, say).
  explicit PostgresServer(const std::string& conf = "") : PostgresServer(nullptr, conf) {}
  // A hot standby streaming from `primary` (asynchronous unless the primary names it in
  // synchronous_standby_names), made with pg_basebackup; promote() makes it a primary.
  static std::unique_ptr<PostgresServer> standby_of(const PostgresServer& primary) {
    // Its walreceiver names itself by cluster_name; promoted, it waits for no standby of its
    // own (pg_basebackup copied the primary's settings).
    return std::unique_ptr<PostgresServer>(
        new PostgresServer(&primary, "cluster_name = 'standby'\nsynchronous_standby_names = ''"));
  }

 private:
  PostgresServer(const PostgresServer* primary, const std::string& extra) {
    if (::access((std::string(kPgBin) + "/initdb").c_str(), X_OK) != 0) {
      why_ = "PostgreSQL 15 is not installed";
      return;
    }
    if (!give_to("postgres", dir_)) {
      why_ = "no postgres user to run the server as";
      return;
    }
    std::string out;
    // initdb's pg_hba.conf trusts replication connections from 127.0.0.1 too.
    const std::vector<std::string> make =
        primary ? std::vector<std::string>{std::string(kPgBin) + "/pg_basebackup",
                                           "-h",
                                           "127.0.0.1",
                                           "-p",
                                           std::to_string(primary->port()),
                                           "-U",
                                           "postgres",
                                           "-D",
                                           data(),
                                           "-R",
                                           "-X",
                                           "stream"}
                : std::vector<std::string>{std::string(kPgBin) + "/initdb",
                                           "-D",
                                           data(),
                                           "-U",
                                           "postgres",
                                           "--auth=trust",
                                           "-E",
                                           "UTF8",
                                           "--locale=C",
                                           "-N"};
    if (as_user("postgres", make, &out) != 0) {
      why_ = (primary ? "pg_basebackup failed: " : "initdb failed: ") + out;
      return;
    }
    // fsync off: every stop here is clean (fast or immediate at the end), and the machine
    // is shared; what is tested is the connections going away.
    std::FILE* conf = std::fopen((data() + "/postgresql.conf").c_str(), "a");
    std::fprintf(conf,
                 "listen_addresses = '127.0.0.1'\nport = %u\nunix_socket_directories = '%s'\n"
                 "fsync = off\nmax_connections = 50\n%s\n",
                 port_, dir_.c_str(), extra.c_str());
    std::fclose(conf);
    if (!start()) {
      why_ = "pg_ctl start failed; see " + dir_ + "/server.log";
      return;
    }
    started_ = true;
  }

 public:
  ~PostgresServer() {
    if (started_) pg_ctl({"-m", "immediate", "stop"});
    remove_dir(dir_);
  }
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  bool started() const { return started_; }
  const std::string& why_not() const { return why_; }
  unsigned short port() const { return port_; }
  std::string uri() const { return "postgres://postgres@127.0.0.1:" + std::to_string(port_) + "/postgres"; }

  // Stops the server (terminating every session) and starts it again; returns when it
  // accepts connections.
  bool restart() { return pg_ctl({"-m", "fast", "restart"}) == 0; }
  // The two halves of a restart, for a longer outage: stop (terminating every session) and
  // start (returns when it accepts connections).
  bool stop() { return pg_ctl({"-m", "fast", "stop"}) == 0; }
  bool start() { return pg_ctl({"start"}) == 0; }
  // As a crash: no checkpoint, no goodbye to the standbys.
  bool crash() { return pg_ctl({"-m", "immediate", "stop"}) == 0; }
  // A standby becomes a primary (returns once it accepts writes).
  bool promote() { return pg_ctl({"promote"}) == 0; }
  // One value of a query, run with psql; "(psql failed: ...)" when it failed. Write string
  // literals $$dollar-quoted$$: arguments reach psql single-quoted.
  std::string query(const std::string& sql) const {
    std::string out;
    if (as_user("postgres",
                {std::string(kPgBin) + "/psql", "-h", "127.0.0.1", "-p", std::to_string(port_), "-U",
                 "postgres", "-d", "postgres", "-AtXc", sql},
                &out) != 0)
      return "(psql failed: " + out + ")";
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
  }

 private:
  std::string data() const { return dir_ + "/data"; }
  int pg_ctl(std::vector<std::string> args) {
    std::vector<std::string> argv{
        std::string(kPgBin) + "/pg_ctl", "-D", data(), "-l", dir_ + "/server.log", "-w", "-t", "60"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string out;
    return as_user("postgres", argv, &out);
  }

  std::string dir_ = temp_dir();
  unsigned short port_ = free_port();
  std::string why_;
  bool started_ = false;
};

// A throwaway MariaDB (Debian's mariadb-server, for the MySQL store) in a temporary
// directory, on a free loopback port, started as scripts/services.d/mariadb.sh starts the
// shared one (as the mysql user when the test is root), with a user idem (password idem)
// owning the database idem. Its max_allowed_packet is the default 16 MiB: results of up to
// 8,380,416 bytes (docs/stores.md, "Sizes"). `extra` lines go to its [mariadbd] section
// (ssl_cert=..., say). SIGKILLed with the object.
class MariadbServer {
 public:
  explicit MariadbServer(const std::string& extra = "") {
    if (::access("/usr/sbin/mariadbd", X_OK) != 0 || ::access("/usr/bin/mariadb-install-db", X_OK) != 0) {
      why_ = "mariadb-server is not installed";
      return;
    }
    if (!give_to("mysql", dir_)) {
      why_ = "no mysql user to run the server as";
      return;
    }
    write_file(dir_ + "/my.cnf", "[mariadbd]\ndatadir=" + dir_ + "/data\nsocket=" + socket() +
                                     "\npid-file=" + dir_ +
                                     "/mysqld.pid\nbind-address=127.0.0.1\nport=" + std::to_string(port_) +
                                     "\nskip-name-resolve\ninnodb_buffer_pool_size=64M\n"
                                     "innodb_flush_log_at_trx_commit=2\nlog-error=" +
                                     dir_ + "/server.log\n" + extra + "\n");
    std::string out;
    std::vector<std::string> install{"/usr/bin/mariadb-install-db", "--defaults-file=" + dir_ + "/my.cnf",
                                     "--auth-root-authentication-method=socket", "--skip-test-db"};
    if (::geteuid() == 0) install.push_back("--user=mysql");
    if (run(install, &out) != 0) {
      why_ = "mariadb-install-db failed: " + out;
      return;
    }
    if (!start()) {
      why_ = "mariadbd did not start; see " + dir_ + "/server.log";
      return;
    }
    // Double quotes: run() quotes each argument in single ones for the shell.
    out.clear();
    if (run({"/usr/bin/mariadb", "--socket=" + socket(), "-u", "root", "-e",
             "CREATE USER \"idem\"@\"127.0.0.1\" IDENTIFIED BY \"idem\"; CREATE DATABASE idem; "
             "GRANT ALL PRIVILEGES ON idem.* TO \"idem\"@\"127.0.0.1\";"},
            &out) != 0) {
      why_ = "creating the user idem failed: " + out;
      return;
    }
    started_ = true;
  }
  ~MariadbServer() {
    server_.reset();
    remove_dir(dir_);
  }
  MariadbServer(const MariadbServer&) = delete;
  MariadbServer& operator=(const MariadbServer&) = delete;

  bool started() const { return started_; }
  const std::string& why_not() const { return why_; }
  unsigned short port() const { return port_; }
  std::string uri() const { return "mysql://idem:idem@127.0.0.1:" + std::to_string(port_) + "/idem"; }

  // Runs `sql` as root (through the socket); false when it failed (said in `out`).
  bool query(const std::string& sql, std::string* out = nullptr) const {
    return run({"/usr/bin/mariadb", "--socket=" + socket(), "-u", "root", "-N", "-e", sql}, out) == 0;
  }

  // A clean shutdown (every session ends); returns when the server has exited.
  bool stop() {
    if (!server_) return true;
    run({"/usr/bin/mariadb-admin", "--socket=" + socket(), "-u", "root", "shutdown"});
    const bool exited = server_->wait(60000) >= 0;
    server_.reset();
    return exited;
  }
  // Starts the server on the same files and port; returns when it answers a ping.
  bool start() {
    std::vector<std::string> argv{"/usr/sbin/mariadbd", "--defaults-file=" + dir_ + "/my.cnf"};
    if (::geteuid() == 0) argv.push_back("--user=mysql");
    server_ = std::make_unique<Process>(argv, dir_ + "/stdout.log");
    return testutil::eventually(
        [&] {
          return run({"/usr/bin/mariadb-admin", "--socket=" + socket(), "-u", "root", "ping"}) == 0;
        },
        std::chrono::seconds(60));
  }

 private:
  std::string socket() const { return dir_ + "/mysqld.sock"; }

  std::string dir_ = temp_dir();
  unsigned short port_ = free_port();
  std::unique_ptr<Process> server_;
  std::string why_;
  bool started_ = false;
};

}  // namespace idem::e2e
