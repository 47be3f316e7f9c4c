#include "stores/redis/redis_connection.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <charconv>
#include <utility>
#include <vector>

#include "stores/redis/redis_tls.h"
#include "util/asio_tokens.h"

namespace idem::redis {
namespace {

constexpr std::size_t kReadBuffer = 64 * 1024;
// Commands per gather write: below the kernel's IOV_MAX (1024), ASKING included.
constexpr std::size_t kMaxBatch = 500;
const std::string kAsking = "*1\r\n$6\r\nASKING\r\n";

}  // namespace

namespace {

std::size_t digits(std::size_t n) {
  std::size_t d = 1;
  while (n >= 10) {
    n /= 10;
    ++d;
  }
  return d;
}

void append_prefixed(std::string& out, char type, std::size_t n) {
  char text[24];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, n);
  out.push_back(type);
  out.append(text, end);
  out.append("\r\n");
}

}  // namespace

void append_command_header(std::string& out, std::size_t arguments) { append_prefixed(out, '*', arguments); }

void append_bulk(std::string& out, std::string_view argument) {
  append_prefixed(out, '$', argument.size());
  out.append(argument);
  out.append("\r\n");
}

std::size_t bulk_size(std::string_view argument) {
  return 1 + digits(argument.size()) + 2 + argument.size() + 2;
}

std::string format_command(std::span<const std::string_view> argv) {
  std::size_t size = 1 + digits(argv.size()) + 2;
  for (std::string_view a : argv) size += bulk_size(a);
  std::string out;
  out.reserve(size);
  append_command_header(out, argv.size());
  for (std::string_view a : argv) append_bulk(out, a);
  return out;
}

Connection::Connection(asio::io_context& io, Endpoint endpoint, const Config& config,
                       Duration connect_timeout, ConnectionEvents& events,
                       std::shared_ptr<asio::ssl::context> tls)
    : io_(io),
      endpoint_(std::move(endpoint)),
      name_(to_string(endpoint_)),
      config_(config),
      connect_timeout_(connect_timeout),
      events_(events),
      tls_(std::move(tls)),
      socket_(io),
      resolver_(io),
      connect_timer_(io),
      read_buffer_(kReadBuffer) {}

Connection::~Connection() = default;

void Connection::send(CallPtr call) {
  unsent_.push_back(std::move(call));
  if (ready_) return schedule_write();
  if (!running_ && !closed_) {
    running_ = true;
    asio::co_spawn(io_, run(), asio::detached);
  }
}

void Connection::close() {
  closed_ = true;
  boost::system::error_code ignored;
  resolver_.cancel();
  connect_timer_.cancel();
  socket().close(ignored);
}

Status Connection::error(const std::string& what) const {
  return unavailable("redis " + name_ + ": " + what);
}

// Connects while there is something to send; after a failure hands everything back to the
// owner, which decides when to send again.
asio::awaitable<void> Connection::run() {
  while (!closed_ && !unsent_.empty()) {
    ++generation_;
    reader_.reset(redisReaderCreate());
    timed_out_ = false;
    reached_ = false;
    write_error_.clear();
    if (tls_) tls_stream_ = std::make_shared<TlsStream>(io_, *tls_);
    Status s = co_await connect();
    if (s) s = co_await handshake();
    connect_timer_.cancel();
    if (s) {
      ready_ = true;
      write_some();
      s = co_await serve();
      ready_ = false;
    }
    ++generation_;  // a write still completing belongs to the attempt that ended
    writing_ = false;
    boost::system::error_code ignored;
    socket().close(ignored);
    if (closed_) break;
    std::vector<CallPtr> unsent(std::make_move_iterator(unsent_.begin()),
                                std::make_move_iterator(unsent_.end()));
    std::vector<CallPtr> written;
    for (CallPtr& c : inflight_) {
      if (c) written.push_back(std::move(c));
    }
    unsent_.clear();
    inflight_.clear();
    events_.on_down(*this, std::move(unsent), std::move(written), std::move(s), reached_);
  }
  running_ = false;
}

asio::awaitable<Status> Connection::connect() {
  connect_timer_.expires_after(connect_timeout_);
  connect_timer_.async_wait([this, gen = generation_](boost::system::error_code ec) {
    if (ec || gen != generation_ || ready_) return;
    timed_out_ = true;
    resolver_.cancel();
    boost::system::error_code ignored;
    socket().close(ignored);
  });
  const std::string port = std::to_string(endpoint_.port);
  auto [rec, results] = co_await resolver_.async_resolve(endpoint_.host, port, util::kUseTuple);
  if (timed_out_) co_return error("connect: timed out");
  if (rec) co_return error("resolve: " + rec.message());
  auto [cec, peer] = co_await asio::async_connect(socket(), results, util::kUseTuple);
  if (timed_out_) co_return error("connect: timed out");
  if (cec) co_return error("connect: " + cec.message());
  reached_ = true;
  boost::system::error_code ignored;
  socket().set_option(asio::ip::tcp::no_delay(true), ignored);
  if (!tls_stream_) co_return Status::ok();
  if (Status s = prepare_tls_stream(*tls_stream_, config_.tls, endpoint_.host); !s) co_return s;
  auto [hec] = co_await tls_stream_->async_handshake(asio::ssl::stream_base::client, util::kUseTuple);
  if (timed_out_) co_return error("TLS handshake: timed out");
  if (hec) {
    const std::string why = "TLS handshake: " + tls_failure(*tls_stream_, hec);
    // A certificate refused is the configuration's to fix (tls_ca, tls_server_name).
    if (tls_verify_failed(*tls_stream_)) co_return failed_precondition("redis " + name_ + ": " + why);
    co_return error(why);
  }
  co_return Status::ok();
}

asio::awaitable<std::tuple<boost::system::error_code, std::size_t>> Connection::read_some() {
  auto buffer = asio::buffer(read_buffer_);
  if (tls_stream_) co_return co_await tls_stream_->async_read_some(buffer, util::kUseTuple);
  co_return co_await socket_.async_read_some(buffer, util::kUseTuple);
}

// AUTH and SELECT from the URI, ROLE for a sentinel's master, PING over TLS when there is
// nothing else, before any call. Their errors are failed_precondition:
// retrying will not help until the configuration changes.
asio::awaitable<Status> Connection::handshake() {
  std::string out;
  std::vector<const char*> what;
  if (!config_.password.empty()) {
    out += config_.user.empty() ? format_command({"AUTH", config_.password})
                                : format_command({"AUTH", config_.user, config_.password});
    what.push_back("AUTH");
  }
  if (config_.db != 0) {
    const std::string db = std::to_string(config_.db);
    out += format_command({"SELECT", db});
    what.push_back("SELECT");
  }
  if (config_.check_role) {
    out += format_command({"ROLE"});
    what.push_back("ROLE");
  }
  if (tls_stream_ && what.empty()) {
    // One answer proves the server took the TLS session (it may refuse a client only now).
    out += format_command({"PING"});
    what.push_back("PING");
  }
  if (what.empty()) co_return Status::ok();
  auto buffer = asio::buffer(out);
  auto [ec, n] = tls_stream_ ? co_await asio::async_write(*tls_stream_, buffer, util::kUseTuple)
                             : co_await asio::async_write(socket_, buffer, util::kUseTuple);
  if (timed_out_) co_return error("handshake: timed out");
  if (ec) co_return error("write: " + ec.message());
  for (const char* command : what) {
    auto reply = co_await read_reply();
    if (!reply) co_return reply.status();
    const redisReply& r = **reply;
    if (r.type == REDIS_REPLY_ERROR) {
      co_return failed_precondition("redis " + name_ + ": " + command +
                                    " failed: " + std::string(r.str, r.len));
    }
    if (std::string_view(command) == "ROLE") {
      // ["master", offset, replicas]; a replica (a master demoted by a failover) answers "slave".
      const bool master = r.type == REDIS_REPLY_ARRAY && r.elements > 0 &&
                          r.element[0]->type == REDIS_REPLY_STRING &&
                          std::string_view(r.element[0]->str, r.element[0]->len) == "master";
      if (!master) {
        const std::string role = r.type == REDIS_REPLY_ARRAY && r.elements > 0 && r.element[0]->str
                                     ? std::string(r.element[0]->str, r.element[0]->len)
                                     : "no role";
        co_return error("ROLE is " + role + ", not master (a failover moved the master)");
      }
    }
  }
  co_return Status::ok();
}

asio::awaitable<Result<Reply>> Connection::read_reply() {
  for (;;) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK) {
      co_return error(std::string("protocol error: ") + reader_->errstr);
    }
    if (raw) co_return Reply(static_cast<redisReply*>(raw));
    auto [ec, n] = co_await read_some();
    if (timed_out_) co_return error("handshake: timed out");
    // A TLS alert here is the server refusing this client (TLS 1.3 sends it after the
    // client's part of the handshake): no client certificate, or one it does not trust.
    if (ec && ec.category() == asio::error::get_ssl_category())
      co_return failed_precondition("redis " + name_ +
                                    ": the server refused the TLS session: " + ec.message());
    if (ec)
      co_return error(ec == asio::error::eof ? "the server closed the connection" : "read: " + ec.message());
    redisReaderFeed(reader_.get(), read_buffer_.data(), n);
  }
}

// Reads and answers until the connection fails.
asio::awaitable<Status> Connection::serve() {
  for (;;) {
    if (auto s = drain_replies(); !s) co_return s;
    auto [ec, n] = co_await read_some();
    if (closed_) co_return error("closed");
    if (!write_error_.empty()) co_return error(write_error_);
    if (ec)
      co_return error(ec == asio::error::eof ? "the server closed the connection" : "read: " + ec.message());
    if (redisReaderFeed(reader_.get(), read_buffer_.data(), n) != REDIS_OK) {
      co_return error(std::string("protocol error: ") + reader_->errstr);
    }
  }
}

Status Connection::drain_replies() {
  for (;;) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK) {
      return error(std::string("protocol error: ") + reader_->errstr);
    }
    if (!raw) return Status::ok();
    Reply reply(static_cast<redisReply*>(raw));
    if (inflight_.empty()) return error("protocol error: a reply to no command");
    CallPtr call = std::move(inflight_.front());
    inflight_.pop_front();
    if (!call) continue;  // ASKING's +OK
    events_.on_reply(*this, std::move(call), std::move(reply));
    if (closed_) return error("closed");
  }
}

// The calls sent while one handler runs (a burst of callers, the replies of one read)
// leave in one write: it is posted, not made at once.
void Connection::schedule_write() {
  if (writing_ || write_scheduled_) return;
  write_scheduled_ = true;
  asio::post(io_, [this] {
    write_scheduled_ = false;
    write_some();
  });
}

// One gather write of everything queued (up to kMaxBatch); the next starts when it ends.
void Connection::write_some() {
  if (!ready_ || writing_ || unsent_.empty()) return;
  batch_.clear();
  buffers_.clear();
  while (!unsent_.empty() && buffers_.size() + 2 <= kMaxBatch) {
    CallPtr c = std::move(unsent_.front());
    unsent_.pop_front();
    if (c->done) continue;
    c->asked = std::exchange(c->asking, false);
    if (c->asked) {
      buffers_.push_back(asio::buffer(kAsking));
      inflight_.push_back(nullptr);
    }
    buffers_.push_back(asio::buffer(c->bytes()));
    c->sent = true;
    inflight_.push_back(c);
    batch_.push_back(std::move(c));
  }
  if (batch_.empty()) return;
  writing_ = true;
  ++writes_;
  // batch_ keeps the bytes alive until the write is over: the next write_some() (the
  // earliest that clears it) comes after this completion, even when the connection is
  // lost meanwhile (its next attempt connects first).
  auto done = [this, gen = generation_, stream = tls_stream_](boost::system::error_code ec,
                                                              std::size_t written) {
    if (gen != generation_) return;
    writing_ = false;
    if (ec) {
      write_error_ = "write: " + ec.message();
      take_back_unwritten(written);
      boost::system::error_code ignored;
      socket().close(ignored);
      return;
    }
    write_some();
  };
  if (tls_stream_) {
    asio::async_write(*tls_stream_, buffers_, std::move(done));
  } else {
    asio::async_write(socket_, buffers_, std::move(done));
  }
}

// After a failed write: the calls of `batch` none of whose bytes went out (past `written`)
// were never sent, so they go back to the queue (unavailable if they find no other way,
// never outcome unknown).
void Connection::take_back_unwritten(std::size_t written) {
  const std::vector<CallPtr>& batch = batch_;
  std::size_t offset = 0, first_unwritten = batch.size();
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (offset >= written) {
      first_unwritten = i;
      break;
    }
    offset += (batch[i]->asked ? kAsking.size() : 0) + batch[i]->bytes().size();
  }
  // They are the last of inflight_, each after its ASKING (nullptr) if it had one.
  for (std::size_t i = batch.size(); i-- > first_unwritten;) {
    const CallPtr& c = batch[i];
    if (!inflight_.empty() && inflight_.back() == c) inflight_.pop_back();
    if (c->asked && !inflight_.empty() && !inflight_.back()) inflight_.pop_back();
    c->sent = false;
    c->asking = std::exchange(c->asked, false);
    unsent_.push_front(c);
  }
}

}  // namespace idem::redis
