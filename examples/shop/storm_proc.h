// The processes the storm runs: the shop, the consumer and `idem serve`, each started with
// fork/exec, its stdout and stderr appended to a log file, killed and restarted on purpose,
// and reaped when it exits (the storm calls reap() on SIGCHLD).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace shop::storm {

// A free TCP port on 127.0.0.1, drawn from 20000-24999: below the kernel's ephemeral range,
// so no outgoing connection takes it before the child binds it.
unsigned short free_port();

class Proc {
 public:
  Proc(std::string name, std::vector<std::string> argv, std::string log_file);
  ~Proc();  // SIGKILLs a child still running
  Proc(const Proc&) = delete;
  Proc& operator=(const Proc&) = delete;

  const std::string& name() const { return name_; }
  const std::string& log_file() const { return log_; }
  std::vector<std::string>& argv() { return argv_; }  // used by the next start()
  bool running() const { return pid_ > 0; }
  int starts() const { return starts_; }

  // Starts the child; reaps a previous, already killed one first. The child gets SIGKILL
  // if the storm dies (PR_SET_PDEATHSIG), so a killed storm leaves nothing behind.
  // False when fork failed.
  bool start();
  void signal(int sig) const;
  // SIGKILL now; the exit is expected (reap() reports it as such).
  void kill_now();

  // Collects the child's exit without blocking. True when it has just exited and the exit
  // was not caused by kill_now() or stop(); `how` then says how it ended.
  bool reap(std::string* how);

  // SIGTERM, wait up to `grace` for the exit, then SIGKILL. Returns how it ended.
  std::string stop(std::chrono::milliseconds grace);

 private:
  std::string name_;
  std::vector<std::string> argv_;
  std::string log_;
  pid_t pid_ = -1;
  bool expect_exit_ = false;
  int starts_ = 0;
};

std::string describe_status(int status);

}  // namespace shop::storm
