// Tokens on the memory store.
#include "idem/tokens.h"

#include <atomic>
#include <chrono>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include "idem/open.h"

namespace idem {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

TEST(Tokens, IssueConsumeRestore) {
  auto store = open_store("memory:").value();
  Tokens tokens(*store, "user-1", 10min);
  auto t = tokens.issue();
  ASSERT_TRUE(t);
  EXPECT_GE(t->size(), 22u);
  EXPECT_EQ(Tokens(*store, "user-2").consume(*t).value(), ConsumeOutcome::invalid) << "bound to its scope";
  EXPECT_EQ(tokens.consume(*t).value(), ConsumeOutcome::consumed);
  EXPECT_EQ(tokens.consume(*t).value(), ConsumeOutcome::invalid);
  EXPECT_EQ(tokens.restore(*t).value(), RestoreOutcome::restored);
  EXPECT_EQ(tokens.consume(*t).value(), ConsumeOutcome::consumed);
  EXPECT_EQ(tokens.restore("never-issued").value(), RestoreOutcome::invalid);
}

TEST(Tokens, ExactlyOneConcurrentConsumerWins) {
  constexpr int kThreads = 16;
  auto store = open_store("memory:").value();
  Tokens tokens(*store, "u");
  const std::string t = tokens.issue().value();
  std::atomic<int> consumed{0};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      consumed += tokens.consume(t).value() == ConsumeOutcome::consumed;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(consumed.load(), 1);
}

TEST(TokensAsync, IssueConsumeRestore) {
  auto store = open_store("memory:").value();
  Tokens tokens(*store, "u");
  asio::io_context ioc;
  auto f = asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<std::vector<std::string>> {
        std::vector<std::string> out;
        auto t = (co_await tokens.async_issue()).value();
        out.push_back(to_string((co_await tokens.async_consume(t)).value()));
        out.push_back(to_string((co_await tokens.async_consume(t)).value()));
        out.push_back(to_string((co_await tokens.async_restore(t)).value()));
        out.push_back(to_string((co_await tokens.async_consume(t)).value()));
        co_return out;
      },
      asio::use_future);
  ioc.run();
  EXPECT_EQ(f.get(), (std::vector<std::string>{"consumed", "invalid", "restored", "consumed"}));
}

}  // namespace
}  // namespace idem
