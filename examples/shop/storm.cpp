// shop-storm: runs the shop, its points consumer and `idem serve` in front of it, sends N
// users through a realistic order-and-payment flow with injected faults (clicks, two
// devices, client timeouts, callback storms, kill -9 of the shop and the gateway, a
// consumer that dies before its ack), then checks from the database that nothing was done
// twice and prints a report. Exit 0 without violations (with --expect-violations: with
// some), 1 otherwise, 2 on usage, 3 when it could not set up. See README.md, "The storm".
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>

#include <CLI/CLI.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/signal_set.hpp>

#include "storm_checks.h"
#include "storm_env.h"
#include "storm_proc.h"
#include "storm_users.h"

#ifndef SHOP_SOURCE_DIR
#define SHOP_SOURCE_DIR "."
#endif

namespace shop::storm {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string idem, shop, consumer, amqp, db, workdir, config_dir = SHOP_SOURCE_DIR;
  // --spring JAR: the Spring shop (examples/spring-shop) instead of the shop, its consumer and
  // the gateway: one JVM serves the HTTP API on the gateway's port, protected by the starter
  // alone, and a second one runs the points consumer.
  std::string spring, java = "java";
  int users = 1000, concurrency = 64;
  bool unprotected = false, expect_violations = false;
  std::uint64_t seed = 0;
};

// A command as execv needs it: a name without '/' looked up in $PATH ("" when not found).
std::string on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (std::size_t at = 0; at <= dirs.size();) {
    std::size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    const std::string candidate = dirs.substr(at, end - at) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    at = end + 1;
  }
  return "";
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string addr(unsigned short port) { return "127.0.0.1:" + std::to_string(port); }

class Storm {
 public:
  Storm(const Options& opt, Env& env) : opt_(opt), env_(env), run_(ioc_), children_(ioc_, SIGCHLD) {}

  // Runs everything; returns the exit code.
  int run() {
    const auto t0 = Clock::now();
    run_.ports = Ports{free_port(), free_port(), free_port()};
    // A killed JVM is back after seconds, not 300 ms: its clients keep retrying for longer.
    if (!opt_.spring.empty()) run_.budget = Millis(120000);
    run_.skus = env_.seed_skus(opt_.users, opt_.seed);
    plan_users(run_, opt_.users, opt_.seed);
    make_processes();
    watch_children();
    for (auto* p : procs())
      if (!p->start()) throw SetupError("cannot fork " + p->name());
    asio::co_spawn(ioc_, main(), [this](std::exception_ptr e) {
      children_.cancel();
      if (e) std::rethrow_exception(e);
    });
    ioc_.run();
    // Each process must also stop cleanly when asked: a sanitizer's report at exit (a leak,
    // say) or a failing shutdown shows up here as a non-zero status, and counts as a crash.
    for (auto* p : {gateway_.get(), shop_.get(), consumer_.get()}) {
      if (!p) continue;
      const std::string how = p->stop(std::chrono::seconds(opt_.spring.empty() ? 10 : 30));
      if (how.rfind("SIGKILL", 0) == 0) std::cout << "  note: " << p->name() << " needed " << how << "\n";
      if (how != "exit 0" && how != "not running")
        crashes_.push_back(p->name() + " did not stop cleanly (" + how + "); see " + p->log_file());
    }
    if (!setup_error_.empty()) throw SetupError(setup_error_);
    return report(seconds_since(t0));
  }

 private:
  // The processes of this run: the gateway is absent in --spring runs.
  std::vector<Proc*> procs() {
    std::vector<Proc*> out;
    for (auto* p : {shop_.get(), consumer_.get(), gateway_.get()})
      if (p) out.push_back(p);
    return out;
  }

  // The Spring shop: the web part on the gateway's port (clients reach it where they reached
  // the gateway), the consumer in a JVM of its own. --idem.enabled=false is the control run.
  void make_spring_processes() {
    auto jvm = [&](std::vector<std::string> args) {
      std::vector<std::string> argv{opt_.java,
                                    "-XX:TieredStopAtLevel=1",
                                    "-Xss512k",
                                    "-jar",
                                    opt_.spring,
                                    "--db=" + env_.shop_db(),
                                    "--amqp=" + opt_.amqp,
                                    "--shop.queue=" + env_.queue()};
      if (opt_.unprotected) argv.push_back("--idem.enabled=false");
      argv.insert(argv.end(), args.begin(), args.end());
      return argv;
    };
    shop_ =
        std::make_unique<Proc>("spring shop",
                               jvm({"--shop.role=web", "--server.port=" + std::to_string(run_.ports.gateway),
                                    "--shop.slow-percent=10", "--shop.slow-ms=400"}),
                               env_.path("shop.log"));
    consumer_ = std::make_unique<Proc>("spring shop consumer",
                                       jvm({"--shop.role=consumer", "--crash-before-ack", "5"}),
                                       env_.path("consumer.log"));
  }

  void make_processes() {
    if (!opt_.spring.empty()) return make_spring_processes();
    const std::string config = opt_.config_dir + (opt_.unprotected ? "/idem-unprotected.yaml" : "/idem.yaml");
    shop_ = std::make_unique<Proc>(
        "shop",
        std::vector<std::string>{opt_.shop, "--listen", addr(run_.ports.shop), "--db", env_.shop_db(),
                                 "--store", env_.shop_store(), "--amqp", opt_.amqp, "--queue", env_.queue(),
                                 "--slow-percent", "10", "--slow-ms", "400"},
        env_.path("shop.log"));
    consumer_ = std::make_unique<Proc>(
        "shop-consumer",
        std::vector<std::string>{opt_.consumer, "--amqp", opt_.amqp, "--db", env_.shop_db(), "--store",
                                 env_.shop_store(), "--queue", env_.queue(), "--crash-before-ack", "5"},
        env_.path("consumer.log"));
    gateway_ = std::make_unique<Proc>(
        "idem serve",
        std::vector<std::string>{opt_.idem, "serve", "--config", config, "--listen", addr(run_.ports.gateway),
                                 "--upstream", "http://" + addr(run_.ports.shop), "--store",
                                 env_.gateway_store(), "--admin", addr(run_.ports.admin)},
        env_.path("gateway.log"));
  }

  // On SIGCHLD: a process that died on its own is restarted. The consumer killing itself
  // (SIGKILL) before its ack is the planned fault (it comes back without
  // --crash-before-ack); any other exit is a crash, reported as a violation: a consumer
  // that could not even start (its store refused to open, say) among them.
  void watch_children() {
    children_.async_wait([this](const boost::system::error_code& ec, int) {
      if (ec) return;
      for (auto* p : procs()) {
        std::string how;
        if (!p->reap(&how) || stopping_) continue;
        auto& argv = p->argv();
        const bool planned = p == consumer_.get() && argv.size() >= 2 &&
                             argv[argv.size() - 2] == "--crash-before-ack" &&
                             how == std::string("signal ") + ::strsignal(SIGKILL);
        if (planned) {
          argv.resize(argv.size() - 2);
          ++run_.tally.faults["consumer killed before its ack"];
        } else {
          crashes_.push_back(p->name() + " exited on its own (" + how + "); see " + p->log_file());
        }
        // A process that keeps dying (it cannot bind its port, say) is not restarted forever.
        if (ready_ && ++restarts_[p->name()] <= 5) p->start();
      }
      watch_children();
    });
  }

  awaitable<bool> ready(Proc& p, unsigned short port, const char* target) {
    Outgoing out;
    out.method = http::verb::get;
    out.target = target;
    out.deadline = Millis(1000);
    const auto until = Clock::now() + std::chrono::seconds(startup_seconds());
    while (Clock::now() < until && p.running()) {
      const Reply r = co_await send(port, out);
      if (r.status == 200) co_return true;
      co_await pause(Millis(50));
    }
    setup_error_ = p.name() + " did not become ready (" + std::string(target) + " on " + addr(port) +
                   (p.running() ? " within " + std::to_string(startup_seconds()) + " s" : ": it exited") +
                   "); see " + p.log_file();
    co_return false;
  }

  // A JVM takes seconds to start where the C++ processes take milliseconds.
  int startup_seconds() const { return opt_.spring.empty() ? 30 : 180; }

  awaitable<void> kill_and_restart(Proc* p, std::string what) {
    p->kill_now();
    ++run_.tally.faults[what];
    co_await pause(Millis(300));
    if (!stopping_) p->start();
  }

  void inject_faults() {
    const std::size_t done = run_.done, users = run_.users.size();
    if (!shop_killed_ && done * 100 >= users * 35) {
      shop_killed_ = true;
      asio::co_spawn(ioc_, kill_and_restart(shop_.get(), "shop kill -9"), asio::detached);
    }
    if (!gateway_killed_ && done * 100 >= users * 65) {
      gateway_killed_ = true;
      // Without a gateway (--spring), the shop itself is killed a second time.
      if (gateway_)
        asio::co_spawn(ioc_, kill_and_restart(gateway_.get(), "gateway kill -9"), asio::detached);
      else
        asio::co_spawn(ioc_, kill_and_restart(shop_.get(), "shop kill -9 (second)"), asio::detached);
    }
  }

  // Polls the database until every paid order has its points and the outbox is empty.
  awaitable<void> drain() {
    const auto until = Clock::now() + std::chrono::seconds(60);
    for (;;) {
      try {
        pending_points_ = env_.db()
                              .query(
                                  "SELECT COUNT(*) FROM t_order o WHERE o.status = 'PAID' AND NOT EXISTS "
                                  "(SELECT 1 FROM t_points p WHERE p.order_no = o.order_no)")
                              .at(0)
                              .integer(0);
        unsent_ = env_.db().query("SELECT COUNT(*) FROM t_outbox WHERE sent_at IS NULL").at(0).integer(0);
        if (pending_points_ == 0 && unsent_ == 0) co_return;
      } catch (const DbError& e) {
        if (e.kind() == DbError::Kind::other) throw;
      }
      if (Clock::now() >= until) co_return;
      co_await pause(Millis(200));
    }
  }

  awaitable<void> main() {
    if (gateway_) {
      if (!co_await ready(*shop_, run_.ports.shop, "/healthz")) co_return;
      if (!co_await ready(*gateway_, run_.ports.admin, "/readyz")) co_return;
    } else if (!co_await ready(*shop_, run_.ports.gateway, "/healthz")) {
      co_return;
    }
    ready_ = true;
    std::cout << "shop-storm: all up in " << env_.workdir() << "; " << run_.users.size() << " users, "
              << opt_.concurrency << " at a time" << std::endl;
    run_.on_user_done = [this] { inject_faults(); };
    const auto t = Clock::now();
    co_await run_users(run_, opt_.concurrency);
    users_seconds_ = seconds_since(t);
    const auto d = Clock::now();
    co_await drain();
    drain_seconds_ = seconds_since(d);
    stopping_ = true;
  }

  int report(double total_seconds);

  const Options& opt_;
  Env& env_;
  asio::io_context ioc_;
  Run run_;
  asio::signal_set children_;
  std::unique_ptr<Proc> shop_, consumer_, gateway_;
  std::vector<std::string> crashes_;
  std::map<std::string, int> restarts_;  // after exits on their own, by process
  std::string setup_error_;
  bool ready_ = false, stopping_ = false, shop_killed_ = false, gateway_killed_ = false;
  std::int64_t pending_points_ = -1, unsent_ = -1;
  double users_seconds_ = 0, drain_seconds_ = 0;
};

void print_map(const char* title, const std::map<std::string, long>& m) {
  long total = 0;
  std::cout << "  " << title << ":";
  for (const auto& [k, n] : m) {
    std::cout << " " << k << " " << n << ",";
    total += n;
  }
  std::cout << " total " << total << "\n";
}

int Storm::report(double total_seconds) {
  Db& db = env_.db();
  const auto counts = count_orders(db, run_);
  auto checks = run_checks(db, run_);
  std::cout << "\nshop-storm report (seed " << opt_.seed << ", " << run_.users.size() << " users, "
            << env_.database_kind() << ", " << (opt_.spring.empty() ? "" : "Spring shop, ")
            << (opt_.unprotected ? "UNPROTECTED" : "protected") << ")\n";
  std::printf("  time: users %.1f s, drain %.1f s, total %.1f s\n", users_seconds_, drain_seconds_,
              total_seconds);
  print_map("requests sent", run_.tally.sent);
  print_map("faults injected", run_.tally.faults);
  print_map("paying users by payment path", run_.tally.pay_via);
  print_map("client deadlines fired", run_.tally.timeouts);
  print_map(opt_.spring.empty() ? "absorbed by the gateway (Idempotent-Replayed: true)"
                                : "absorbed by the starter (Idempotent-Replayed: true)",
            run_.tally.replayed);
  print_map("409 in-progress/locked seen (retried)", run_.tally.in_progress);
  std::cout << "  absorbed in the shop and consumer (t_stats):";
  for (const auto& [name, n] : read_stats(db)) std::cout << " " << name << " " << n << ",";
  std::cout << "\n  orders: " << counts.orders << " (paid " << counts.paid << ", unpaid " << counts.created
            << "), users sold out " << counts.sold_out << ", users without an order " << counts.without_order
            << "\n";
  if (pending_points_ != 0 || unsent_ != 0)
    std::cout << "  drain: NOT complete after 60 s: " << pending_points_ << " paid orders without points, "
              << unsent_ << " unsent outbox rows\n";
  checks.insert(checks.begin() + 7, Check{"8 no process crashed, and each stopped cleanly", 3, crashes_});
  const long violations = print_checks(std::cout, checks);
  std::cout << "violations: " << violations << std::endl;
  // The workdir (logs, SQLite files) is kept when the run failed: violations where none
  // were expected, or none in the control run.
  const bool pass = opt_.expect_violations ? violations > 0 : violations == 0;
  env_.cleanup(!pass);
  if (!pass) std::cout << "workdir kept: " << env_.workdir() << "\n";
  return pass ? 0 : 1;
}

}  // namespace
}  // namespace shop::storm

int main(int argc, char** argv) {
  using namespace shop::storm;
  Options opt;
  opt.seed = std::random_device{}();
  CLI::App app{"shop-storm: the reference shop under a storm of repeats and crashes"};
  app.add_option("--idem", opt.idem, "the idem binary (not with --spring)")->check(CLI::ExistingFile);
  app.add_option("--shop", opt.shop, "the shop binary (not with --spring)")->check(CLI::ExistingFile);
  app.add_option("--consumer", opt.consumer, "the shop-consumer binary (not with --spring)")
      ->check(CLI::ExistingFile);
  app.add_option("--spring", opt.spring,
                 "the Spring shop's jar (examples/spring-shop): it serves the API protected by the starter, "
                 "no gateway; needs --db mysql://...")
      ->check(CLI::ExistingFile);
  app.add_option("--java", opt.java, "the java command for --spring (default: java on the PATH)");
  app.add_option("--amqp", opt.amqp, "RabbitMQ URL, amqp://USER:PASS@HOST:PORT/VHOST")->required();
  app.add_option(
      "--db", opt.db,
      "PostgreSQL or MySQL server URL, postgres://... or mysql://... (default: SQLite files in the "
      "workdir)");
  app.add_option("--users", opt.users, "users to run")->check(CLI::Range(1, 1000000));
  app.add_option("--concurrency", opt.concurrency, "users at a time")->check(CLI::Range(1, 10000));
  app.add_flag("--unprotected", opt.unprotected, "gateway without routes (idem-unprotected.yaml)");
  app.add_flag("--expect-violations", opt.expect_violations, "exit 0 only when there are violations");
  app.add_option("--seed", opt.seed, "random seed (default: random, printed)");
  app.add_option("--workdir", opt.workdir, "working directory (default: a fresh one, removed when clean)");
  app.add_option("--config-dir", opt.config_dir, "where idem.yaml and idem-unprotected.yaml are")
      ->check(CLI::ExistingDirectory);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return e.get_exit_code() == 0 ? app.exit(e) : (app.exit(e), 2);
  }
  if (opt.spring.empty() && (opt.idem.empty() || opt.shop.empty() || opt.consumer.empty())) {
    std::cerr << "shop-storm: --idem, --shop and --consumer are required (or --spring JAR)\n";
    return 2;
  }
  if (!opt.spring.empty() && (opt.java = on_path(opt.java)).empty()) {
    std::cerr << "shop-storm: --spring: no java on the PATH (give --java PATH)\n";
    return 2;
  }
  if (!opt.spring.empty() && opt.db.rfind("mysql://", 0) != 0) {
    std::cerr << "shop-storm: --spring runs the Spring shop on MySQL/MariaDB: give --db mysql://...\n";
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);
  std::cout << "shop-storm: seed " << opt.seed << std::endl;
  try {
    Env env(opt.workdir, opt.db, opt.seed);
    Storm storm(opt, env);
    return storm.run();
  } catch (const SetupError& e) {
    std::cerr << "shop-storm: setup failed: " << e.what() << std::endl;
    return 3;
  } catch (const shop::DbError& e) {
    std::cerr << "shop-storm: database: " << e.what() << std::endl;
    return 3;
  } catch (const std::exception& e) {  // a bug in the storm itself: no verdict
    std::cerr << "shop-storm: " << e.what() << std::endl;
    return 3;
  }
}
