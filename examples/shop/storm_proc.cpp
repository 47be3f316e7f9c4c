#include "storm_proc.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

namespace shop::storm {

unsigned short free_port() {
  static std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
  for (;;) {
    const auto port = static_cast<unsigned short>(std::uniform_int_distribution<int>(20000, 24999)(rng));
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (free) return port;
  }
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("signal ") + ::strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

Proc::Proc(std::string name, std::vector<std::string> argv, std::string log_file)
    : name_(std::move(name)), argv_(std::move(argv)), log_(std::move(log_file)) {}

Proc::~Proc() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

bool Proc::start() {
  if (pid_ > 0) {  // killed on purpose and not reaped yet: it is dead or dying
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  std::vector<char*> args;
  for (auto& a : argv_) args.push_back(a.data());
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) std::_Exit(127);
    const int log = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (log >= 0) {
      ::dup2(log, 1);
      ::dup2(log, 2);
    }
    // The storm blocks nothing, but reset what a child must not inherit.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(args[0], args.data());
    std::_Exit(127);
  }
  pid_ = pid;
  expect_exit_ = false;
  ++starts_;
  return true;
}

void Proc::signal(int sig) const {
  if (pid_ > 0) ::kill(pid_, sig);
}

void Proc::kill_now() {
  expect_exit_ = true;
  signal(SIGKILL);
}

bool Proc::reap(std::string* how) {
  if (pid_ <= 0) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
  pid_ = -1;
  if (how) *how = describe_status(status);
  return !expect_exit_;
}

std::string Proc::stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return "not running";
  expect_exit_ = true;
  ::kill(pid_, SIGTERM);
  const auto until = std::chrono::steady_clock::now() + grace;
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (std::chrono::steady_clock::now() >= until) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
      return "SIGKILL after " + std::to_string(grace.count()) + " ms";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  pid_ = -1;
  return describe_status(status);
}

}  // namespace shop::storm
