// The systemd notifications of src/cli/service_notify.h in-process: what each call sends,
// nothing without NOTIFY_SOCKET, and a watchdog that stops pinging while one io thread
// hangs and pings again once it runs.
#include "cli/service_notify.h"

#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

#include <gtest/gtest.h>
#include <boost/asio/post.hpp>

#include "gateway/http/io_pool.h"
#include "testutil/notify_socket.h"
#include "testutil/temp_dir.h"

namespace idem::cli {
namespace {

using namespace std::chrono_literals;
using testutil::NotifySocket;
using testutil::ScopedEnv;

TEST(ServiceNotify, StatesAreSentToTheSocket) {
  testutil::TempDir dir;
  NotifySocket sock(dir.file("notify"));
  ScopedEnv env("NOTIFY_SOCKET", sock.path());

  notify_ready("serving on a\nFAKE=1");
  auto d = sock.next(5s);
  ASSERT_TRUE(d);
  EXPECT_TRUE(NotifySocket::has_line(*d, "READY=1"));
  EXPECT_EQ(NotifySocket::value(*d, "MAINPID"), std::to_string(::getpid()));
  // A status is one line: a newline in it cannot smuggle another assignment.
  EXPECT_EQ(NotifySocket::value(*d, "STATUS"), "serving on a FAKE=1");
  EXPECT_FALSE(NotifySocket::has_line(*d, "FAKE=1"));

  notify_reloading();
  d = sock.next(5s);
  ASSERT_TRUE(d);
  EXPECT_TRUE(NotifySocket::has_line(*d, "RELOADING=1"));
  EXPECT_FALSE(NotifySocket::value(*d, "MONOTONIC_USEC").empty());

  notify_stopping();
  d = sock.next(5s);
  ASSERT_TRUE(d);
  EXPECT_TRUE(NotifySocket::has_line(*d, "STOPPING=1"));
}

TEST(ServiceNotify, NothingWithoutNotifySocket) {
  ::unsetenv("NOTIFY_SOCKET");
  ScopedEnv usec("WATCHDOG_USEC", "100000");
  gateway::IoPool pool(2);
  notify_ready("x");
  notify_stopping();
  EXPECT_EQ(start_watchdog(pool), 0);
}

TEST(ServiceNotify, WatchdogStopsWhileAnIoThreadHangs) {
  testutil::TempDir dir;
  NotifySocket sock(dir.file("notify"));
  ScopedEnv env("NOTIFY_SOCKET", sock.path());
  ScopedEnv usec("WATCHDOG_USEC", "100000");  // a ping every 50 ms
  gateway::IoPool pool(3);
  ASSERT_EQ(start_watchdog(pool), 100000);
  std::thread runner([&] { pool.run(); });

  for (int i = 0; i < 3; ++i) ASSERT_TRUE(sock.until("WATCHDOG=1", 5s)) << "ping " << i;

  // The last io thread hangs: at most the ping already past it is sent, then none.
  std::promise<void> entered, release;
  boost::asio::post(pool.at(2), [&] {
    entered.set_value();
    release.get_future().wait();
  });
  entered.get_future().wait();
  // The ping that was past it when it hung may still come: 200 ms for it.
  const auto settled = std::chrono::steady_clock::now() + 200ms;
  while (std::chrono::steady_clock::now() < settled) (void)sock.next(20ms);
  EXPECT_FALSE(sock.until("WATCHDOG=1", 500ms)) << "a ping while an io thread hangs";

  release.set_value();
  EXPECT_TRUE(sock.until("WATCHDOG=1", 5s)) << "no ping after the thread runs again";

  pool.stop();
  runner.join();
}

}  // namespace
}  // namespace idem::cli
