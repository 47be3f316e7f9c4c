// One TCP connection to one Redis node, pipelined: commands queue up, go out in batches
// (one gather write of everything queued, sent once the caller's turn on the thread is
// over, so that the calls of one burst share it), and replies are matched to them in
// order (FIFO), parsed by hiredis's reader from each read in one go. The connection connects on demand
// (over TLS for the rediss schemes), authenticates, selects the database and, for redis+sentinel://'s master,
// checks that the server is the master (ROLE) before anything else, and on any failure hands its calls back
// to its owner (ConnectionEvents): those none of whose bytes were written may go elsewhere; those written,
// wholly or in part, are in doubt (their outcome is unknown). It retries nothing by itself: the owner
// (redis_client.h) decides about backoff and redirection.
//
// Thread safety: none. Everything, its owner's callbacks included, runs on one io_context
// thread.
#pragma once

#include <hiredis/hiredis.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "idem/clock.h"
#include "idem/detail/unique_function.h"
#include "idem/status.h"
#include "stores/redis/redis_scripts.h"
#include "stores/redis/redis_uri.h"

namespace idem::redis {

namespace asio = boost::asio;
using SteadyClock = std::chrono::steady_clock;

struct ReplyDeleter {
  void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

// One operation on its way through the client, possibly over several connections
// (redirects, retries) until it is answered once, by answer().
struct Call {
  virtual ~Call() = default;

  std::string wire;                // the command, in RESP
  std::string eval_wire;           // after NOSCRIPT: the same call as EVAL (never changed once set)
  const Script* script = nullptr;  // EVALSHA of this script: NOSCRIPT may turn it into EVAL
  int slot = -1;                   // the cluster slot of its keys; -1: any node
  bool pinned = false;             // for this connection only (CLUSTER SLOTS): never rerouted
  bool asking = false;             // precede the next send by ASKING (an ASK redirect)
  bool asked = false;              // the last send was preceded by ASKING
  bool sent = false;               // written, and no answer proved that it did not run
  bool done = false;               // answered: later replies and deadlines are ignored
  int redirects = 0;               // MOVED/ASK followed so far
  // wait=N: after a reply for which needs_wait() holds (a claim, a commit), WAIT for N
  // replicas on the connection that ran it before answering.
  int wait_replicas = 0;
  bool (*needs_wait)(const redisReply&) = nullptr;
  bool awaiting_replicas = false;  // its WAIT is out: that call answers it
  SteadyClock::time_point deadline;
  detail::UniqueFunction<void(Result<Reply>)> complete;  // what the default answer() runs

  // Called once, with the reply or the reason there is none. The store's calls override it
  // to parse the reply for their caller without a second allocation.
  virtual void answer(Result<Reply> result) {
    auto run = std::move(complete);
    run(std::move(result));
  }

  const std::string& bytes() const { return eval_wire.empty() ? wire : eval_wire; }
};
using CallPtr = std::shared_ptr<Call>;

// RESP, written straight into a string: an array header, then each argument as a bulk
// string (append_command_header's `arguments` of them).
void append_command_header(std::string& out, std::size_t arguments);
void append_bulk(std::string& out, std::string_view argument);
// The bytes append_bulk writes for `argument`.
std::size_t bulk_size(std::string_view argument);

// A command in RESP.
std::string format_command(std::span<const std::string_view> argv);
inline std::string format_command(std::initializer_list<std::string_view> argv) {
  return format_command(std::span<const std::string_view>(argv.begin(), argv.size()));
}

class Connection;

class ConnectionEvents {
 public:
  virtual void on_reply(Connection& from, CallPtr call, Reply reply) = 0;
  // The connection failed (or could not be made). `unsent` were never written; `written`
  // were written (wholly or in part) and got no answer: they may or may not have run.
  // `reached` is false when no connection to the server was made (refused, unresolvable,
  // unreachable, timed out), true when it was made and failed later (a handshake error
  // included).
  virtual void on_down(Connection& from, std::vector<CallPtr> unsent, std::vector<CallPtr> written,
                       Status why, bool reached) = 0;

 protected:
  ~ConnectionEvents() = default;
};

class Connection {
 public:
  // `connect_timeout` bounds resolving, connecting and the TLS and AUTH/SELECT/ROLE
  // handshakes. `tls`: the context of the rediss schemes (config.tls.on), else nullptr.
  Connection(asio::io_context& io, Endpoint endpoint, const Config& config, Duration connect_timeout,
             ConnectionEvents& events, std::shared_ptr<asio::ssl::context> tls);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Queues the call; connects first when idle. The write goes out after the current
  // handler returns, with every call queued by then.
  void send(CallPtr call);
  // For good: aborts what is in progress; tells the owner nothing more.
  void close();

  const Endpoint& endpoint() const { return endpoint_; }
  // Gather writes started so far (each carries every call queued when it started).
  std::uint64_t writes() const { return writes_; }
  const std::string& name() const { return name_; }  // "host:port"

 private:
  asio::awaitable<void> run();
  asio::awaitable<Status> connect();
  asio::awaitable<Status> handshake();
  asio::awaitable<Result<Reply>> read_reply();
  asio::awaitable<Status> serve();
  Status drain_replies();
  void schedule_write();
  void write_some();
  void take_back_unwritten(std::size_t written);
  Status error(const std::string& what) const;
  asio::ip::tcp::socket& socket() { return tls_stream_ ? tls_stream_->next_layer() : socket_; }
  asio::awaitable<std::tuple<boost::system::error_code, std::size_t>> read_some();

  struct ReaderDeleter {
    void operator()(redisReader* r) const noexcept { redisReaderFree(r); }
  };

  asio::io_context& io_;
  const Endpoint endpoint_;
  const std::string name_;
  const Config& config_;
  const Duration connect_timeout_;
  ConnectionEvents& events_;

  using TlsStream = asio::ssl::stream<asio::ip::tcp::socket>;
  const std::shared_ptr<asio::ssl::context> tls_;
  asio::ip::tcp::socket socket_;  // without TLS
  // With TLS: one stream per connection attempt, shared with the write in progress, which
  // may complete after its attempt ended.
  std::shared_ptr<TlsStream> tls_stream_;
  asio::ip::tcp::resolver resolver_;
  asio::steady_timer connect_timer_;
  std::unique_ptr<redisReader, ReaderDeleter> reader_;
  std::vector<char> read_buffer_;

  std::deque<CallPtr> unsent_;    // waiting to be written
  std::deque<CallPtr> inflight_;  // written, in reply order; nullptr: a reply to discard (ASKING)
  // The write in progress: its calls (which keep its bytes alive) and its buffers, reused.
  std::vector<CallPtr> batch_;
  std::vector<asio::const_buffer> buffers_;
  bool running_ = false;  // run() is active
  bool ready_ = false;    // connected and handshaken: writes may go
  bool writing_ = false;
  bool write_scheduled_ = false;  // a write_some() is posted
  bool closed_ = false;
  bool timed_out_ = false;        // the connect timer fired during this attempt
  bool reached_ = false;          // this attempt connected to the server
  std::string write_error_;       // why the last write failed
  std::uint64_t generation_ = 0;  // one per connection attempt: stale completions see a change
  std::uint64_t writes_ = 0;
};

}  // namespace idem::redis
