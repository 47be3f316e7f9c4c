// A TCP proxy for fault tests: it listens on a free loopback port, forwards each
// connection to a target server (Redis, PostgreSQL...), and can be switched at run time to
// lose the server's replies, delay them, cut the connections or refuse new ones. So a test
// can make "the command reached the server but no answer came back" happen for real, on
// a real server that other tests share, without pausing or reconfiguring that server.
//
// It counts what it forwards, so a test waits for an event ("the command reached the
// server") instead of sleeping.
//
// Thread safety: every member may be called from any thread; the proxy runs its own
// io_context thread. Switching mode affects the bytes that arrive after the switch.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace idem::testutil {

class FaultProxy {
 public:
  enum class Mode {
    forward,        // both ways, as is
    drop_replies,   // the client's bytes reach the server; the server's replies are lost
                    // and the connection stays open (the client waits for its deadline)
    drop_and_cut,   // as drop_replies, then the connection is closed on the first reply
    delay_replies,  // replies reach the client `delay` late
  };

  // What has gone through the proxy since it started.
  struct Counters {
    std::uint64_t connections = 0;        // accepted from clients
    std::uint64_t bytes_to_server = 0;    // written to the server
    std::uint64_t writes_to_server = 0;   // chunks written to the server (about: commands)
    std::uint64_t bytes_from_server = 0;  // read from the server, whether dropped or not
    std::uint64_t bytes_to_client = 0;    // written to clients
    std::uint64_t replies_dropped = 0;    // chunks from the server that were lost
  };

  // Starts listening on 127.0.0.1 (a free port) and forwarding to host:port.
  FaultProxy(std::string target_host, std::uint16_t target_port);
  // Closes every connection and stops the thread.
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  std::uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }  // "127.0.0.1:PORT"

  // Everything back to normal: forward, accept new connections again.
  void forward();
  void drop_replies();
  void drop_and_cut();
  void delay_replies(std::chrono::milliseconds delay);
  // Closes every open connection now (the mode stays).
  void cut_all();
  // Closes the listening socket: new connections are refused (ECONNREFUSED) until
  // forward() or accept_again(). Open connections stay.
  void refuse();
  void accept_again();

  Counters counters() const;
  // Waits until `done(counters())` holds; false after `limit`.
  bool wait_for(const std::function<bool(const Counters&)>& done,
                std::chrono::milliseconds limit = std::chrono::seconds(10)) const;
  // Waits until more than `before` bytes have been written to the server.
  bool wait_to_server_beyond(std::uint64_t before,
                             std::chrono::milliseconds limit = std::chrono::seconds(10)) const;

 private:
  struct Impl;

  std::unique_ptr<Impl> impl_;
  std::uint16_t port_ = 0;
};

}  // namespace idem::testutil
