// SPEC I8: a `committed` acknowledged by sqlite: (sync=normal) survives a kill -9 of the
// process that acknowledged it. Each round starts sqlite_durability_child, reads a random
// number of its acknowledgements, kills it at once with SIGKILL, reopens the file and
// checks that every acknowledged key is done with its exact result.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <random>
#include <string>

#include "stores/sqlite/sqlite_store.h"
#include "stores/sqlite_durability_result.h"
#include "testutil/temp_dir.h"

#ifndef IDEM_DURABILITY_CHILD
#error "IDEM_DURABILITY_CHILD must name the sqlite_durability_child binary"
#endif

extern char** environ;

namespace idem {
namespace {

// A running child whose standard output is a pipe to us.
class Child {
 public:
  Child(const std::string& db_path, const std::string& scope) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    std::string program = IDEM_DURABILITY_CHILD;
    std::string path = db_path, scope_arg = scope;
    char* argv[] = {program.data(), path.data(), scope_arg.data(), nullptr};
    if (posix_spawn(&pid_, program.c_str(), &actions, nullptr, argv, environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    out_ = fds[0];
  }
  ~Child() {
    kill_now();
    if (out_ >= 0) ::close(out_);
  }

  bool started() const { return pid_ > 0 && out_ >= 0; }

  // The next "acked N" line; -1 on end of output, a malformed line or no line in time.
  long next_ack(std::chrono::seconds deadline) {
    for (;;) {
      if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
        const std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        if (line.rfind("acked ", 0) != 0) return -1;
        return std::stol(line.substr(6));
      }
      pollfd p{out_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(deadline.count() * 1000)) <= 0) return -1;
      char chunk[512];
      const ssize_t n = ::read(out_, chunk, sizeof chunk);
      if (n <= 0) return -1;
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }

  // SIGKILL, then reap. Returns the wait status.
  int kill_now() {
    if (pid_ <= 0) return 0;
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string buffer_;
};

TEST(SqliteDurability, AcknowledgedCommitsSurviveKill9) {
  testutil::TempDir dir;
  const std::string path = dir.file("durable.db");
  const auto seed = std::random_device{}();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::uniform_int_distribution<int> acks(1, 20);

  constexpr int kRounds = 50;
  for (int round = 0; round < kRounds; ++round) {
    const std::string scope = "round-" + std::to_string(round);
    const int want = acks(rng);
    long seen = 0;
    {
      Child child(path, scope);
      ASSERT_TRUE(child.started()) << "cannot start " << IDEM_DURABILITY_CHILD;
      while (seen < want) {
        const long ack = child.next_ack(std::chrono::seconds(60));
        ASSERT_EQ(ack, seen) << "round " << round << ": the child stopped or answered out of order";
        ++seen;
      }
      const int status = child.kill_now();
      ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "round " << round;
    }

    auto store = sqlite::open(path, StoreOptions{});
    ASSERT_TRUE(store.is_ok()) << "round " << round << ": " << store.status().to_string();
    for (long i = 0; i < seen; ++i) {
      auto r = (*store)->get({scope, "k" + std::to_string(i)});
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      ASSERT_TRUE(r->has_value()) << "round " << round << ": acknowledged key k" << i << " is lost";
      EXPECT_EQ((*r)->state, RecordState::done) << "round " << round << " k" << i;
      EXPECT_EQ((*r)->result, testutil::result_for(scope, static_cast<std::uint64_t>(i)))
          << "round " << round << " k" << i;
    }
  }
}

}  // namespace
}  // namespace idem
