// The raw baseline for the MySQL store in bench/stores/run: the store's own begin and commit
// statements (stores/mysql/mysql_sql.h), sent by THREADS blocking connections of MariaDB
// Connector/C, each operation as its own autocommitted round trip, as hand-written application
// code sends them: no batching, no group commit of ours (InnoDB's own group commit still joins
// concurrent transactions). Prints the begin+commit pairs per second.
//   mysql_pairs URL [THREADS=64] [SECONDS=10]
// URL: mysql://user:pass@host:port/db?table_prefix=P, whose tables exist (`idem sweep --store URL`
// creates them).
#include <mysql.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "stores/mysql/mysql_sql.h"

namespace {

struct Url {
  std::string user, password, host, db, prefix;
  unsigned port = 3306;
};

bool parse(std::string s, Url& u) {
  const std::string scheme = "mysql://";
  if (s.rfind(scheme, 0) != 0) return false;
  s = s.substr(scheme.size());
  if (const auto q = s.find('?'); q != std::string::npos) {
    const std::string query = s.substr(q + 1);
    s.resize(q);
    const std::string key = "table_prefix=";
    if (const auto k = query.find(key); k != std::string::npos)
      u.prefix = query.substr(k + key.size(), query.find('&', k) - k - key.size());
  }
  const auto at = s.rfind('@');
  if (at == std::string::npos) return false;
  const std::string creds = s.substr(0, at), rest = s.substr(at + 1);
  u.user = creds.substr(0, creds.find(':'));
  if (creds.find(':') != std::string::npos) u.password = creds.substr(creds.find(':') + 1);
  const auto slash = rest.find('/');
  const std::string hostport = rest.substr(0, slash);
  u.db = slash == std::string::npos ? "" : rest.substr(slash + 1);
  u.host = hostport.substr(0, hostport.find(':'));
  if (hostport.find(':') != std::string::npos)
    u.port = static_cast<unsigned>(std::stoul(hostport.substr(hostport.find(':') + 1)));
  return true;
}

[[noreturn]] void die(MYSQL* c, const char* what) {
  std::fprintf(stderr, "mysql_pairs: %s: %s\n", what, c ? mysql_error(c) : "out of memory");
  std::exit(1);
}

// Runs a multi-statement text; returns the first column of the first row of statement `answer`
// as an integer when `column` >= 0 (the fence), else 0.
long long run(MYSQL* c, const idem::mysql::Sql& sql, int column) {
  if (mysql_real_query(c, sql.text.data(), sql.text.size()) != 0) die(c, "query");
  long long value = 0;
  for (int i = 0;; ++i) {
    MYSQL_RES* res = mysql_store_result(c);
    if (res) {
      if (i == sql.answer && column >= 0)
        if (MYSQL_ROW row = mysql_fetch_row(res); row && row[column]) value = std::atoll(row[column]);
      mysql_free_result(res);
    } else if (mysql_field_count(c) != 0) {
      die(c, "result");
    }
    const int next = mysql_next_result(c);
    if (next > 0) die(c, "next result");
    if (next < 0) break;
  }
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  Url url;
  if (argc < 2 || !parse(argv[1], url)) {
    std::fprintf(stderr,
                 "usage: mysql_pairs mysql://user:pass@host:port/db[?table_prefix=P] [THREADS] [SECONDS]\n");
    return 2;
  }
  const int threads = argc > 2 ? std::atoi(argv[2]) : 64;
  const int seconds = argc > 3 ? std::atoi(argv[3]) : 10;
  mysql_library_init(0, nullptr, nullptr);
  const idem::mysql::Statements statements(url.prefix);
  std::atomic<long long> pairs{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      mysql_thread_init();
      MYSQL* c = mysql_init(nullptr);
      if (!c || !mysql_real_connect(c, url.host.c_str(), url.user.c_str(), url.password.c_str(),
                                    url.db.c_str(), url.port, nullptr, CLIENT_MULTI_STATEMENTS))
        die(c, "connect");
      run(c, idem::mysql::Sql{idem::mysql::session_sql(5), 5, 4}, -1);
      long long done = 0;
      const std::string prefix = "raw-" + std::to_string(::time(nullptr)) + "-" + std::to_string(t) + "-";
      for (long long i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        idem::BeginArgs b;
        b.scope = "bench";
        b.key = prefix + std::to_string(i);
        b.fingerprint = "fp";
        b.owner = "raw";
        b.lease = std::chrono::seconds(30);
        b.retention = std::chrono::hours(1);
        const long long fence = run(c, statements.begin(b), 1);
        idem::CommitArgs cm;
        cm.scope = b.scope;
        cm.key = b.key;
        cm.result = std::string(200, 'r');
        cm.retention = std::chrono::hours(1);
        run(c, statements.commit(cm, fence), -1);
        ++done;
      }
      pairs.fetch_add(done);
      mysql_close(c);
      mysql_thread_end();
    });
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  stop.store(true);
  for (auto& w : workers) w.join();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%.0f\n", static_cast<double>(pairs.load()) / elapsed);
  mysql_library_end();
  return 0;
}
