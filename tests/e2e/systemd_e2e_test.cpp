// End to end: `idem serve` under systemd's notification protocol (docs/admin.md, "Running
// under systemd"): READY=1 once both listeners accept, WATCHDOG=1 at half of
// WATCHDOG_USEC, STOPPING=1 when SIGTERM starts the drain; bad settings change nothing.
#include <signal.h>

#include <chrono>
#include <optional>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "e2e/e2e_fixture.h"
#include "testutil/notify_socket.h"

namespace idem::e2e {
namespace {

using namespace std::chrono_literals;
using testutil::NotifySocket;
using testutil::ScopedEnv;

struct TempDir {
  std::string path = temp_dir();
  ~TempDir() { remove_dir(path); }
};

// True when a TCP connection to 127.0.0.1:port is accepted (by the kernel: the listener
// is bound and listening).
bool accepts(unsigned short port) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket s(io);
  boost::system::error_code ec;
  s.connect({boost::asio::ip::make_address("127.0.0.1"), port}, ec);
  return !ec;
}

// `idem serve` in front of the test upstream, started with the environment of the scope.
struct Gateway {
  TempDir tmp;
  Process upstream{{IDEM_TEST_UPSTREAM}, tmp.path + "/upstream.log", true};
  unsigned short port = free_port(), admin = free_port();
  std::unique_ptr<Process> idem;
  void start() {
    idem = std::make_unique<Process>(
        std::vector<std::string>{
            IDEM_BIN, "serve", "--upstream", "http://127.0.0.1:" + std::to_string(upstream.port()), "--store",
            "sqlite:" + tmp.path + "/idem.db", "--listen", "127.0.0.1:" + std::to_string(port), "--admin",
            "127.0.0.1:" + std::to_string(admin)},
        tmp.path + "/idem.log");
  }
};

TEST(SystemdNotify, ReadyOnceListeningThenWatchdogThenStopping) {
  Gateway g;
  NotifySocket sock(g.tmp.path + "/notify");
  {
    ScopedEnv notify("NOTIFY_SOCKET", sock.path());
    ScopedEnv watchdog("WATCHDOG_USEC", "200000");  // a ping every 100 ms
    g.start();
  }
  auto ready = sock.until("READY=1", 20s);
  ASSERT_TRUE(ready) << "no READY=1; " << read_text(g.tmp.path + "/idem.log");
  // Said only once both listeners accept: a client connecting now is served.
  EXPECT_TRUE(accepts(g.port));
  EXPECT_TRUE(accepts(g.admin));
  EXPECT_EQ(NotifySocket::value(*ready, "MAINPID"), std::to_string(g.idem->pid()));
  EXPECT_NE(NotifySocket::value(*ready, "STATUS").find("serving on 127.0.0.1:" + std::to_string(g.port)),
            std::string::npos)
      << *ready;
  EXPECT_EQ(request(g.port, verb::post, "/x", {{"Idempotency-Key", "k"}}).result_int(), 201u);

  for (int i = 0; i < 3; ++i) ASSERT_TRUE(sock.until("WATCHDOG=1", 10s)) << "watchdog ping " << i;

  // `systemctl reload` (ExecReload sends SIGHUP): RELOADING=1, then READY=1 when it is over.
  g.idem->signal(SIGHUP);
  ASSERT_TRUE(sock.until("RELOADING=1", 20s)) << "no RELOADING=1";
  ASSERT_TRUE(sock.until("READY=1", 20s)) << "no READY=1 after the reload";
  EXPECT_EQ(request(g.port, verb::post, "/x", {{"Idempotency-Key", "k"}}).result_int(), 201u);

  g.idem->signal(SIGTERM);
  auto stopping = sock.until("STOPPING=1", 20s);
  ASSERT_TRUE(stopping) << "no STOPPING=1";
  EXPECT_EQ(g.idem->wait(20000), 0);
}

// READY=1 also when the watchdog is another process's (WATCHDOG_PID) or unreadable:
// no pings then, and the gateway serves and stops as ever.
TEST(SystemdNotify, NoWatchdogWhenNotAskedOrUnreadable) {
  struct Case {
    const char* usec;
    const char* pid;  // WATCHDOG_PID, nullptr: unset
  };
  for (const Case c : {Case{"200000", "1"}, Case{"not-a-number", nullptr}, Case{"", nullptr}}) {
    SCOPED_TRACE(c.usec);
    Gateway g;
    NotifySocket sock(g.tmp.path + "/notify");
    {
      ScopedEnv notify("NOTIFY_SOCKET", sock.path());
      ScopedEnv watchdog("WATCHDOG_USEC", c.usec);
      std::optional<ScopedEnv> pid;
      if (c.pid) pid.emplace("WATCHDOG_PID", c.pid);  // 1: not idem's
      g.start();
    }
    ASSERT_TRUE(sock.until("READY=1", 20s)) << read_text(g.tmp.path + "/idem.log");
    EXPECT_EQ(request(g.port, verb::post, "/x", {{"Idempotency-Key", "k"}}).result_int(), 201u);
    // A ping would have come within 100 ms; nothing is an event, so wait for it a while.
    EXPECT_FALSE(sock.until("WATCHDOG=1", 600ms));
    g.idem->signal(SIGTERM);
    EXPECT_TRUE(sock.until("STOPPING=1", 20s));
    EXPECT_EQ(g.idem->wait(20000), 0);
  }
}

// A notification socket that is gone (or never was) stops nothing.
TEST(SystemdNotify, MissingSocketIsIgnored) {
  Gateway g;
  {
    ScopedEnv notify("NOTIFY_SOCKET", g.tmp.path + "/no-such-socket");
    ScopedEnv watchdog("WATCHDOG_USEC", "100000");
    g.start();
  }
  ASSERT_TRUE(wait_healthy(g.admin, 20000));
  EXPECT_EQ(request(g.port, verb::post, "/x", {{"Idempotency-Key", "k"}}).result_int(), 201u);
  g.idem->signal(SIGTERM);
  EXPECT_EQ(g.idem->wait(20000), 0);
}

}  // namespace
}  // namespace idem::e2e
