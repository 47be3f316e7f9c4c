// The MySQL store. One thread runs an io_context that owns a few connections of MariaDB
// Connector/C in its non-blocking mode (MYSQL_OPT_NONBLOCK, the *_start/*_cont calls), each
// driven by a coroutine that waits for the connector's socket on the loop. Callers only enqueue;
// a free connection takes the queued operations as one batch: START TRANSACTION, each operation's
// statements, COMMIT, sent as one multi-statement query and answered with one result per
// statement (group commit: one round trip, one commit, one redo log flush for the batch). A
// batch's statements are sorted by the row they lock, so concurrent batches lock rows in one
// order. Answers wait for the COMMIT's result: a `committed` is acknowledged only once the server
// has committed it (I8, with innodb_flush_log_at_trx_commit=1).
//
// Failures (docs/stores.md): a statement error ends its batch, which is rolled back; that
// operation gets the error and the others run again (a deadlock or a lock wait timeout runs them
// all again). An operation never sent (no connection within op_timeout, a query whose write
// failed) is unavailable; a connection lost after sending, or no answer within op_timeout, fails
// the operations in flight on it with deadline_exceeded (the outcome is unknown: the COMMIT may
// have happened) unless the batch had already failed (then nothing was applied: unavailable), and
// the connection is replaced. Callbacks run on the io thread, never under a lock, exactly once.
#include "stores/mysql/mysql_store.h"

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <poll.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <functional>

#include "core/listing.h"
#include "core/state_machine.h"
#include "stores/mysql/mysql_ops.h"
#include "stores/mysql/mysql_target.h"
#include "stores/protocol/protocol_files.h"
#include "util/asio_tokens.h"

namespace idem::mysql {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using OpPtr = std::unique_ptr<Op>;
using batching::SteadyClock;

constexpr std::size_t kConnections = 4;
// Operations per batch (one transaction): enough to amortise a commit's log flush, few enough
// that a failing batch delays few callers.
constexpr std::size_t kMaxBatch = 128;
// Bytes of SQL per batch, at most (an operation larger than this runs alone, up to the server's
// max_allowed_packet).
constexpr std::size_t kMaxBatchBytes = 1 << 20;
constexpr auto kBackoffFirst = 20ms;
constexpr auto kBackoffMax = 2s;
constexpr auto kKeepalive = 30s;
constexpr unsigned long kFlags = CLIENT_MULTI_STATEMENTS | CLIENT_FOUND_ROWS;

struct Batch {
  std::vector<OpPtr> ops;
  Status error;  // the first statement error; the transaction did not commit
  static constexpr std::size_t kAll = static_cast<std::size_t>(-1);
  std::size_t error_at = kAll;  // the op whose statement failed; kAll: every op
  bool retry_all = false;       // the error rolled everything back by itself: all run again
};

struct Connection {
  explicit Connection(asio::io_context& io) : socket(io), io_timer(io), wake(io) {}
  enum class State { down, connecting, ready, busy, backoff };

  MYSQL* my = nullptr;
  asio::posix::stream_descriptor socket;  // the connector's; never closed by asio
  asio::steady_timer io_timer;            // the connector's own timeouts
  asio::steady_timer wake;                // idle or pausing: cancelled to go on
  State state = State::down;
  std::optional<Batch> batch;  // the batch it runs
  bool abort = false;          // give up on the call in progress (deadline, shutdown)
  bool connect_failed = false;
  // Connecting or a keepalive: when the call in progress is given up.
  SteadyClock::time_point call_deadline{};
  SteadyClock::duration backoff = kBackoffFirst;
  std::size_t max_query = kMaxBatchBytes;  // from the server's max_allowed_packet
};

// How a query ended. failed: a statement's error (`at`, 0-based, is the failing statement);
// broken: the connection failed, or the call was abandoned.
struct Exec {
  enum class Kind { done, failed, broken } kind = Kind::done;
  std::size_t at = 0;
  bool sent = false;  // the query was written whole: the server may have run it
  unsigned error_number = 0;
  std::string reason;
};

using OnResult = std::function<void(std::size_t index, const Reply& reply)>;

class MysqlStore final : public batching::BatchingStore<Op> {
 public:
  MysqlStore(Target target, const StoreOptions& options, std::uint64_t max_result_bytes)
      : BatchingStore(options, unavailable("mysql: not connected yet")),
        max_result_bytes_(max_result_bytes),
        target_(std::move(target)),
        sql_(target_.prefix) {
    for (std::size_t i = 0; i < kConnections; ++i) conns_.push_back(std::make_unique<Connection>(io_));
    start();
  }

  // Stops accepting; every operation already accepted gets its answer first.
  ~MysqlStore() override { stop(); }

  const StoreTraits& traits() const noexcept override {
    static constexpr StoreTraits kTraits{"mysql", /*native_expiry=*/false, /*durable=*/true,
                                         /*controllable_clock=*/false, /*ordered_list=*/true};
    return kTraits;
  }
  // From the server's max_allowed_packet when the store opened (max_result_for_packet).
  std::uint64_t max_result_bytes() const noexcept override { return max_result_bytes_; }

 protected:
  void do_begin(BeginArgs a, Callback<BeginOutcome> cb) override {
    submit<BeginOutcome>(sql_.begin(a), lock_order('r', a.scope, a.key), &read_begin, std::move(cb));
  }
  void do_commit(CommitArgs a, Callback<CommitOutcome> cb) override {
    submit<CommitOutcome>(sql_.commit(a, fence_value(a.fence)), lock_order('r', a.scope, a.key), &read_commit,
                          std::move(cb));
  }
  void do_release(ReleaseArgs a, Callback<ReleaseOutcome> cb) override {
    submit<ReleaseOutcome>(sql_.release(a, fence_value(a.fence)), lock_order('r', a.scope, a.key),
                           &read_release, std::move(cb), /*alone=*/a.restore_token.has_value());
  }
  void do_abandon(AbandonArgs a, Callback<ReleaseOutcome> cb) override {
    submit<ReleaseOutcome>(sql_.abandon(a), lock_order('r', a.scope, a.key), &read_release, std::move(cb));
  }
  void do_extend(ExtendArgs a, Callback<ExtendOutcome> cb) override {
    submit<ExtendOutcome>(sql_.extend(a, fence_value(a.fence)), lock_order('r', a.scope, a.key), &read_extend,
                          std::move(cb));
  }
  void do_get(RecordId a, Callback<std::optional<Record>> cb) override {
    // A plain read locks nothing.
    submit<std::optional<Record>>(sql_.get(a), std::string(), &read_get, std::move(cb));
  }
  void do_remove(RecordId a, Callback<bool> cb) override {
    submit<bool>(sql_.remove(a), lock_order('r', a.scope, a.key), &read_remove, std::move(cb));
  }
  // One statement of at most limit + 1 rows; a plain read locks nothing.
  void do_list(ListArgs a, Callback<ListPage> cb) override {
    auto after = core::decode_position(a.cursor);
    if (!after) return cb(after.status());
    const std::optional<std::string> end = core::prefix_end(a.key_prefix);
    submit<ListPage>(sql_.list(a, end, *after ? &**after : nullptr), std::string(), &read_list,
                     [limit = a.limit, cb = std::move(cb)](Result<ListPage> r) mutable {
                       if (!r) return cb(r.status());
                       cb(core::make_page(std::move(r->records), limit));
                     });
  }
  void do_sweep(Callback<std::uint64_t> cb) override { enqueue(make_sweep(std::move(cb))); }

  void do_issue_token(IssueTokenArgs a, Callback<std::string> cb) override {
    auto token = core::random_token();
    if (!token) return cb(token.status());
    auto order = lock_order('t', a.scope, *token);
    submit<bool>(sql_.issue_token(a, *token), std::move(order), &read_issued,
                 [token = *token, cb = std::move(cb)](Result<bool> r) mutable {
                   if (!r) return cb(r.status());
                   if (!*r) return cb(internal_error("mysql: a new token was not stored"));
                   cb(std::move(token));
                 });
  }
  void do_consume_token(TokenArgs a, Callback<ConsumeOutcome> cb) override {
    submit<ConsumeOutcome>(sql_.consume_token(a), lock_order('t', a.scope, a.token), &read_consume,
                           std::move(cb));
  }
  void do_restore_token(RestoreTokenArgs a, Callback<RestoreOutcome> cb) override {
    submit<RestoreOutcome>(sql_.restore_token(a), lock_order('t', a.scope, a.token), &read_restore,
                           std::move(cb));
  }

  void do_lock(LockArgs a, Callback<LockOutcome> cb) override {
    submit<LockOutcome>(sql_.lock(a), lock_order('l', a.name), &read_lock, std::move(cb));
  }
  void do_unlock(UnlockArgs a, Callback<UnlockOutcome> cb) override {
    submit<UnlockOutcome>(sql_.unlock(a), lock_order('l', a.name), &read_unlock, std::move(cb));
  }
  void do_extend_lock(LockArgs a, Callback<LockExtendOutcome> cb) override {
    submit<LockExtendOutcome>(sql_.extend_lock(a), lock_order('l', a.name), &read_extend_lock, std::move(cb));
  }

  void do_ping(Callback<Done> cb) override {
    submit<Done>(sql_.ping(), std::string(), &read_ping, std::move(cb));
  }

 private:
  // A fence beyond BIGINT matches no row (fences stay below 2^53).
  static std::int64_t fence_value(Fence f) { return f > kMaxFence ? -1 : static_cast<std::int64_t>(f); }

  // ---- callers' side -------------------------------------------------------------------

  template <class T>
  void submit(Sql sql, std::string order, Reader<T> reader, Callback<T> cb, bool alone = false) {
    auto op = std::make_unique<TypedOp<T>>(reader, std::move(cb), std::move(sql), std::move(order));
    op->alone = alone;
    enqueue(std::move(op));
  }

  // ---- the io thread: the queue ----------------------------------------------------------

  void start_connections() override {
    for (auto& c : conns_) asio::co_spawn(io_, run(*c), asio::detached);
  }

  // Hands queued operations, as batches, to the connections that are free.
  void dispatch() override {
    while (!queue_.empty()) {
      Connection* free = nullptr;
      for (auto& c : conns_) {
        if (c->state == Connection::State::ready && !c->batch) {
          free = c.get();
          break;
        }
      }
      if (!free) return;
      Batch batch;
      std::size_t bytes = 0;
      const auto now = SteadyClock::now();
      const std::size_t limit = std::min(kMaxBatchBytes, free->max_query);
      while (!queue_.empty() && batch.ops.size() < kMaxBatch) {
        Op& next = *queue_.front();
        if (!batch.ops.empty() && (next.alone || bytes + next.sql.text.size() > limit)) break;
        OpPtr op = std::move(queue_.front());
        queue_.pop_front();
        if (op->deadline <= now) {
          op->fail(not_run());
          continue;
        }
        if (op->sql.text.size() + 64 > free->max_query) {
          op->fail(invalid_argument(
              target_.message("not run", "the call's values exceed the server's max_allowed_packet (" +
                                             std::to_string(free->max_query) + " bytes)")));
          continue;
        }
        bytes += op->sql.text.size();
        const bool alone = op->alone;
        batch.ops.push_back(std::move(op));
        if (alone) break;
      }
      if (batch.ops.empty()) continue;
      std::stable_sort(batch.ops.begin(), batch.ops.end(),
                       [](const OpPtr& a, const OpPtr& b) { return a->lock_order < b->lock_order; });
      free->batch = std::move(batch);
      free->state = Connection::State::busy;
      free->wake.cancel();
    }
  }

  bool reachable() const override {
    return std::any_of(conns_.begin(), conns_.end(), [](const auto& c) {
      return c->state != Connection::State::backoff || !c->connect_failed;
    });
  }

  std::string message(std::string_view what, std::string_view reason) const override {
    return target_.message(what, reason);
  }

  // ---- the io thread: one connection's life ------------------------------------------------

  awaitable<void> run(Connection& c) {
    while (!stopped_) {
      c.state = Connection::State::connecting;
      c.call_deadline = SteadyClock::now() + op_timeout_;
      Status up = co_await connect(c);
      if (!up.is_ok()) {
        close(c, /*broken=*/true);
        if (stopped_) break;
        last_error_ = up;
        c.state = Connection::State::backoff;
        c.connect_failed = true;
        fail_queue_if_unreachable();
        maybe_stop();
        const auto pause = c.backoff;
        c.backoff = std::min<SteadyClock::duration>(c.backoff * 2, kBackoffMax);
        co_await sleep(c, pause);
        continue;
      }
      c.state = Connection::State::ready;
      c.connect_failed = false;
      c.backoff = kBackoffFirst;
      dispatch();
      bool alive = true;
      while (alive && !stopped_) {
        if (!c.batch) {
          const bool idle = co_await sleep(c, kKeepalive);
          if (idle && !c.batch && !stopped_) alive = co_await keepalive(c);
          continue;
        }
        alive = co_await run_batch(c);
        if (!alive) break;
        c.state = Connection::State::ready;
        dispatch();
        maybe_stop();
      }
      close(c, /*broken=*/!alive);
      if (stopped_) break;
      // Lost: reconnect after a short pause.
      c.state = Connection::State::backoff;
      c.connect_failed = false;
      maybe_stop();
      co_await sleep(c, c.backoff);
    }
    c.state = Connection::State::down;
  }

  // Until the duration passes (true) or someone cancels c.wake (false).
  awaitable<bool> sleep(Connection& c, SteadyClock::duration d) {
    if (stopped_) co_return false;
    c.wake.expires_after(d);
    auto [ec] = co_await c.wake.async_wait(util::kUseTuple);
    co_return !ec;
  }

  // A connection idle for kKeepalive says a word to the server, so that neither the server's
  // wait_timeout nor a middlebox ends it unseen (the next batch would then be sent into a
  // closed connection and be outcome unknown). False: the connection is lost.
  awaitable<bool> keepalive(Connection& c) {
    c.state = Connection::State::busy;  // no batch meanwhile
    c.call_deadline = SteadyClock::now() + op_timeout_;
    static const std::string kWord(protocol::body("mysql/keepalive.sql"));
    OnResult ignore = [](std::size_t, const Reply&) {};
    const Exec ex = co_await exec(c, kWord, ignore);
    c.state = Connection::State::ready;
    if (ex.kind != Exec::Kind::done) co_return false;
    dispatch();
    co_return true;
  }

  awaitable<Status> connect(Connection& c) {
    c.abort = false;
    c.my = target_.handle(op_timeout_, /*nonblocking=*/true);
    if (c.my == nullptr) co_return unavailable(target_.message("cannot connect", "out of memory"));
    MYSQL* ret = nullptr;
    const char* db = target_.db.empty() ? nullptr : target_.db.c_str();
    int status = mysql_real_connect_start(&ret, c.my, target_.host.c_str(), target_.user.c_str(),
                                          target_.password.c_str(), db, target_.port, nullptr, kFlags);
    while (status != 0) {
      const int events = co_await wait_io(c, status);
      if (events == 0) {
        co_return unavailable(target_.message("cannot connect", "no answer within op_timeout"));
      }
      status = mysql_real_connect_cont(&ret, c.my, events);
    }
    if (ret == nullptr) co_return target_.connect_error(c.my);
    if (Status tls = target_.check_tls(c.my); !tls) co_return tls;

    // The server gives up waiting for a row lock a little after we do, so nothing it holds
    // stays stuck behind a connection we abandoned.
    const auto lock_wait = std::chrono::duration_cast<std::chrono::seconds>(op_timeout_ + 1999ms).count();
    const std::string setup = session_sql(lock_wait);
    std::string max_packet;
    OnResult on_result = [&max_packet](std::size_t, const Reply& r) {
      if (!r.rows.empty() && !r.rows[0].empty() && r.rows[0][0]) max_packet = *r.rows[0][0];
    };
    const Exec ex = co_await exec(c, setup, on_result);
    if (ex.kind == Exec::Kind::broken) co_return unavailable(target_.message("cannot set up", ex.reason));
    if (ex.kind == Exec::Kind::failed) {
      co_return target_.statement_error(c.my, "cannot set up the connection");
    }
    if (!max_packet.empty()) c.max_query = std::max<std::size_t>(std::stoull(max_packet), 4096);
    co_return Status::ok();
  }

  // Waits for what the connector asked for (MYSQL_WAIT_*); the events that came, 0 when the
  // call is abandoned.
  awaitable<int> wait_io(Connection& c, int status) {
    using namespace asio::experimental::awaitable_operators;
    for (;;) {
      if (c.abort) co_return 0;
      const int fd = mysql_get_socket(c.my);
      if (!c.socket.is_open() || c.socket.native_handle() != fd) {
        release_socket(c);
        boost::system::error_code ec;
        c.socket.assign(fd, ec);
        if (ec) co_return 0;
      }
      if (status & MYSQL_WAIT_TIMEOUT) {
        c.io_timer.expires_after(std::chrono::milliseconds(mysql_get_timeout_value_ms(c.my)));
      } else {
        c.io_timer.expires_at(SteadyClock::time_point::max());
      }
      const auto want = (status & MYSQL_WAIT_WRITE) ? asio::posix::stream_descriptor::wait_write
                                                    : asio::posix::stream_descriptor::wait_read;
      auto ready = c.socket.async_wait(want, util::kUseTuple);
      auto timeout = c.io_timer.async_wait(util::kUseTuple);
      auto either = std::move(ready) || std::move(timeout);
      co_await std::move(either);
      if (c.abort) co_return 0;
      pollfd p{fd,
               static_cast<short>(((status & MYSQL_WAIT_READ) ? POLLIN : 0) |
                                  ((status & MYSQL_WAIT_WRITE) ? POLLOUT : 0)),
               0};
      int events = 0;
      if (::poll(&p, 1, 0) > 0) {
        const bool failed = (p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0;
        if ((status & MYSQL_WAIT_READ) && ((p.revents & POLLIN) || failed)) events |= MYSQL_WAIT_READ;
        if ((status & MYSQL_WAIT_WRITE) && ((p.revents & POLLOUT) || failed)) events |= MYSQL_WAIT_WRITE;
      }
      if (events == 0 && (status & MYSQL_WAIT_TIMEOUT) && SteadyClock::now() >= c.io_timer.expiry()) {
        events = MYSQL_WAIT_TIMEOUT;
      }
      if (events != 0) co_return events;
    }
  }

  // Runs `sql` (one or many statements) and hands each statement's result to on_result.
  awaitable<Exec> exec(Connection& c, const std::string& sql, const OnResult& on_result) {
    Exec ex;
    if (closed_by_server(c)) {
      ex.kind = Exec::Kind::broken;
      ex.reason = "the server had closed the connection";
      co_return ex;
    }
    int err = 0;
    int status = mysql_real_query_start(&err, c.my, sql.data(), static_cast<unsigned long>(sql.size()));
    while (status != 0) {
      if (status & MYSQL_WAIT_READ) ex.sent = true;  // written whole: the connector waits for the answer
      const int events = co_await wait_io(c, status);
      if (events == 0) co_return abandoned(ex);
      status = mysql_real_query_cont(&err, c.my, events);
    }
    for (std::size_t i = 0;; ++i) {
      if (err != 0) co_return failure(c, ex, i);
      ex.sent = true;
      MYSQL_RES* res = nullptr;
      status = mysql_store_result_start(&res, c.my);
      while (status != 0) {
        const int events = co_await wait_io(c, status);
        if (events == 0) {
          if (res) mysql_free_result(res);
          co_return abandoned(ex);
        }
        status = mysql_store_result_cont(&res, c.my, events);
      }
      Reply reply;
      if (res == nullptr) {
        if (mysql_field_count(c.my) > 0) co_return failure(c, ex, i);
        reply.matched = mysql_affected_rows(c.my);
      } else {
        const unsigned columns = mysql_num_fields(res);
        while (MYSQL_ROW row = mysql_fetch_row(res)) {
          const unsigned long* lengths = mysql_fetch_lengths(res);
          auto& out = reply.rows.emplace_back();
          for (unsigned col = 0; col < columns; ++col) {
            if (row[col] == nullptr) {
              out.emplace_back();
            } else {
              out.emplace_back(std::string(row[col], lengths[col]));
            }
          }
        }
        reply.matched = reply.rows.size();
        mysql_free_result(res);
      }
      on_result(i, reply);
      if (!mysql_more_results(c.my)) co_return ex;
      status = mysql_next_result_start(&err, c.my);
      while (status != 0) {
        const int events = co_await wait_io(c, status);
        if (events == 0) co_return abandoned(ex);
        status = mysql_next_result_cont(&err, c.my, events);
      }
      if (err < 0) co_return ex;  // no more results
    }
  }

  // A server speaks only when asked, except to say goodbye (a KILL, wait_timeout): an idle
  // connection with something to read, or at its end, is closed, and a query written to it would
  // be lost after sending (outcome unknown) although it never ran.
  static bool closed_by_server(Connection& c) {
    pollfd p{mysql_get_socket(c.my), POLLIN, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
  }

  Exec abandoned(Exec ex) const {
    ex.kind = Exec::Kind::broken;
    ex.reason = "no answer within op_timeout";
    return ex;
  }

  // The statement at `at` failed: the server's error, or the connection's.
  Exec failure(Connection& c, Exec ex, std::size_t at) const {
    ex.at = at;
    ex.error_number = mysql_errno(c.my);
    ex.reason = mysql_error(c.my);
    if (!client_error(ex.error_number)) {
      ex.kind = Exec::Kind::failed;
      ex.sent = true;
      return ex;
    }
    ex.kind = Exec::Kind::broken;
    // The connector reports a write that failed as "gone away": the server never had the whole
    // query. Any other failure may have come after the server ran it.
    if (ex.error_number != CR_SERVER_GONE_ERROR) ex.sent = true;
    return ex;
  }

  // Runs c.batch; false when the connection broke (the batch has its answers either way).
  awaitable<bool> run_batch(Connection& c) {
    Batch& b = *c.batch;
    std::string sql = "START TRANSACTION;";
    std::vector<std::size_t> op_at{Batch::kAll};  // the op of each statement's result
    std::vector<bool> answers{false};
    for (std::size_t i = 0; i < b.ops.size(); ++i) {
      Op& op = *b.ops[i];
      ++op.runs;
      sql += op.sql.text;
      for (int s = 0; s < op.sql.count; ++s) {
        op_at.push_back(i);
        answers.push_back(s == op.sql.answer);
      }
    }
    sql += "COMMIT";
    op_at.push_back(Batch::kAll);
    answers.push_back(false);
    const std::size_t results = op_at.size();

    std::size_t seen = 0;
    OnResult on_result = [&](std::size_t i, const Reply& reply) {
      seen = i + 1;
      if (i < results && answers[i] && !b.ops[op_at[i]]->answered()) b.ops[op_at[i]]->read(reply);
    };
    const Exec ex = co_await exec(c, sql, on_result);
    if (ex.kind == Exec::Kind::done && seen == results) {
      finish_batch(c);
      co_return true;
    }
    if (ex.kind == Exec::Kind::broken) {
      fail_batch(c, ex);
      co_return false;
    }
    if (ex.kind == Exec::Kind::done) {
      b.error = internal_error(target_.message(
          "batch failed",
          "the server answered " + std::to_string(seen) + " of " + std::to_string(results) + " statements"));
    } else {
      b.error = target_.statement_error(c.my, "statement failed");
      b.error_at = ex.at < results ? op_at[ex.at] : Batch::kAll;
      b.retry_all = retryable(ex.error_number);
    }
    // The transaction did not commit; end it before anything else runs on the connection.
    OnResult ignore = [](std::size_t, const Reply&) {};
    static const std::string kRollback = "ROLLBACK";
    const Exec rolled = co_await exec(c, kRollback, ignore);
    if (rolled.kind != Exec::Kind::done) {
      fail_batch(c, rolled);
      co_return false;
    }
    finish_batch(c);
    co_return true;
  }

  // The batch's transaction has ended: committed, or rolled back after the error of the op at
  // error_at. That op gets the error; the others did not happen and run again, so one bad call
  // does not fail its neighbours.
  void finish_batch(Connection& c) {
    Batch done = std::move(*c.batch);
    c.batch.reset();
    settle(done.ops, done.error, [&](std::size_t i) {
      return !done.retry_all && (done.error_at == i || done.error_at == Batch::kAll);
    });
  }

  // The connection ended with the batch not answered. A batch whose transaction had already
  // failed applied nothing, nor did one never sent: its operations run again on another
  // connection (the failing one gets its error; past their deadline they are unavailable). Any
  // other may have committed just before the answer was lost: its outcome is unknown
  // (docs/stores.md, "When a store call fails").
  void fail_batch(Connection& c, const Exec& ex) {
    Batch b = std::move(*c.batch);
    c.batch.reset();
    std::vector<OpPtr> again;
    for (std::size_t i = 0; i < b.ops.size(); ++i) {
      OpPtr& op = b.ops[i];
      if (op->answered()) continue;
      const bool failed = !b.error.is_ok();
      if (failed && (i == b.error_at || b.error_at == Batch::kAll)) {
        op->fail(b.error);
      } else if (failed || !ex.sent) {
        if (!c.abort && op->runs < kMaxRuns) {
          again.push_back(std::move(op));
        } else {
          op->fail(unavailable(target_.message(
              failed ? "rolled back with its batch; nothing was applied" : "not sent; nothing was applied",
              ex.reason)));
        }
      } else {
        op->fail(
            deadline_exceeded(target_.message("connection lost after sending; the outcome is unknown",
                                              ex.reason + (c.abort ? "; the server may still run it" : ""))));
      }
    }
    queue_.insert(queue_.begin(), std::make_move_iterator(again.begin()),
                  std::make_move_iterator(again.end()));
    dispatch();
  }

  void release_socket(Connection& c) {
    if (!c.socket.is_open()) return;
    boost::system::error_code ec;
    c.socket.cancel(ec);
    c.socket.release();  // the connector owns the descriptor
  }

  // Abandons whatever call the connection's coroutine waits in.
  void abort(Connection& c) {
    c.abort = true;
    boost::system::error_code ec;
    if (c.socket.is_open()) c.socket.cancel(ec);
    c.io_timer.cancel();
    c.wake.cancel();
  }

  // A healthy connection says goodbye (COM_QUIT); a broken one, or one left halfway through a
  // call, is cut first, so that the close cannot block: every further read or write fails.
  void close(Connection& c, bool broken = false) {
    release_socket(c);
    if (c.my) {
      if (c.abort || broken) mariadb_cancel(c.my);
      mysql_close(c.my);
    }
    c.my = nullptr;
    c.abort = false;
    c.state = Connection::State::down;
  }

  // ---- the io thread: deadlines, shutdown ------------------------------------------------

  void check_connections(SteadyClock::time_point now) override {
    for (auto& c : conns_) {
      if (c->abort) continue;
      const bool calling =
          c->state == Connection::State::connecting || (c->state == Connection::State::busy && !c->batch);
      if (calling && now >= c->call_deadline) abort(*c);
      if (c->state == Connection::State::busy && c->batch && overdue(*c->batch, now)) abort(*c);
    }
  }

  static bool overdue(const Batch& b, SteadyClock::time_point now) {
    return std::any_of(b.ops.begin(), b.ops.end(),
                       [now](const OpPtr& op) { return !op->answered() && op->deadline <= now; });
  }

  bool busy() const override {
    return std::any_of(conns_.begin(), conns_.end(), [](const auto& c) { return c->batch.has_value(); });
  }

  // The connections' coroutines end, each closing its connection: idle ones at once, the
  // others abandoning what they wait for (connecting, a keepalive).
  void close_connections() override {
    for (auto& c : conns_) {
      if (c->state == Connection::State::ready) {
        c->wake.cancel();
      } else {
        abort(*c);
      }
    }
  }

  OpPtr make_sweep(Callback<std::uint64_t> cb) override {
    return std::make_unique<SweepOp>(sql_, std::move(cb));
  }

  const std::uint64_t max_result_bytes_;
  const Target target_;
  const Statements sql_;
  std::vector<std::unique_ptr<Connection>> conns_;
};

// Runs statements on a blocking connection; `first` gets the first column of the first row.
Status run_blocking(const Target& t, MYSQL* m, const std::string& sql, std::string_view what,
                    std::string* first = nullptr) {
  if (mysql_real_query(m, sql.data(), static_cast<unsigned long>(sql.size())) != 0) {
    return t.statement_error(m, what);
  }
  for (;;) {
    MYSQL_RES* res = mysql_store_result(m);
    if (res) {
      MYSQL_ROW row = mysql_fetch_row(res);
      if (first && row && mysql_num_fields(res) > 0 && row[0]) *first = row[0];
      mysql_free_result(res);
    } else if (mysql_field_count(m) > 0) {
      return t.statement_error(m, what);
    }
    const int next = mysql_next_result(m);
    if (next < 0) return Status::ok();
    if (next > 0) return t.statement_error(m, what);
  }
}

// Tables created by an earlier version get the wider columns of limits.h in place; with
// create_tables=false (`alter` false) a narrower column is refused instead.
Status widen_columns(const Target& t, MYSQL* m, bool alter) {
  for (const Widening& w : widenings(t.prefix)) {
    std::string width;
    if (Status s = run_blocking(t, m, w.width_sql, "cannot read the tables' columns", &width); !s) return s;
    if (width.empty() || std::stoull(width) >= w.width) continue;
    if (!alter) {
      return failed_precondition(
          t.message("create_tables=false, and a column is narrower than this version needs",
                    w.column + " holds " + width + " bytes, not " + std::to_string(w.width) +
                        "; widen it with the ALTER TABLE that `idem schema --store` shows"));
    }
    if (Status s = run_blocking(t, m, w.alter_sql, "cannot widen a column"); !s) return s;
  }
  return Status::ok();
}

// Creates the tables if missing, and widens those of an earlier version, under the schema lock.
Status create_tables(const Target& t, MYSQL* m, Duration op_timeout) {
  const auto wait_s =
      std::max<std::int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(op_timeout).count());
  std::string got;
  if (Status s = run_blocking(t, m, schema_lock_sql(t.prefix, wait_s), "cannot lock the schema", &got); !s) {
    return s;
  }
  if (got != "1") {
    return unavailable(t.message("cannot create the tables", "another process held the schema lock '" +
                                                                 schema_lock(t.prefix) + "' for op_timeout"));
  }
  Status created = run_blocking(t, m, schema_sql(t.prefix), "cannot create the tables");
  if (created) created = widen_columns(t, m, true);
  // Closing the connection releases the lock too; releasing it at once lets the next opener in.
  Status released = run_blocking(t, m, schema_unlock_sql(t.prefix), "cannot unlock the schema");
  return created ? released : created;
}

// create_tables=false: the tables must be there, as this version uses them.
Status check_tables(const Target& t, MYSQL* m) {
  Status checked = run_blocking(t, m, check_schema_sql(t.prefix), "cannot check the tables");
  if (!checked && (mysql_errno(m) == ER_NO_SUCH_TABLE || mysql_errno(m) == ER_BAD_FIELD_ERROR)) {
    return failed_precondition(t.message(
        "create_tables=false, and the tables " + t.prefix + "records, " + t.prefix + "tokens, " + t.prefix +
            "locks are missing or older than this version",
        std::string(mysql_error(m)) + "; create them with the DDL that `idem schema --store` prints for "
                                      "this URI"));
  }
  return checked ? widen_columns(t, m, false) : checked;
}

// A result goes into the commit statement hex-encoded (two bytes each); the rest of the
// statement (the scope, key and fence, hex-encoded too, and its text) takes less than
// kStatementMargin, and the whole statement must fit in max_allowed_packet.
constexpr std::uint64_t kStatementMargin = 16 << 10;
std::uint64_t max_result_for_packet(const std::string& packet) {
  const std::uint64_t bytes = packet.empty() ? 0 : std::stoull(packet);
  return bytes > kStatementMargin ? (bytes - kStatementMargin) / 2 : 0;
}

}  // namespace

Result<std::unique_ptr<Store>> open(std::string_view uri, const StoreOptions& options) {
  auto target = parse_target(uri);
  if (!target) return target.status();
  if (options.op_timeout.count() <= 0) return invalid_argument("mysql: op_timeout must be greater than 0");
  if (options.sweep_interval.count() < 0)
    return invalid_argument("mysql: sweep_interval must not be negative");
  // mysql_init is not safe to call from many threads at once until the library is set up.
  static std::once_flag library;
  std::call_once(library, [] { mysql_library_init(0, nullptr, nullptr); });

  // Connect once, at once: a wrong host, password or database shows here, and the tables are
  // there before the first operation.
  std::unique_ptr<MYSQL, decltype(&mysql_close)> conn(target->handle(options.op_timeout, false),
                                                      &mysql_close);
  if (!conn) return unavailable(target->message("cannot connect", "out of memory"));
  const char* db = target->db.empty() ? nullptr : target->db.c_str();
  if (!mysql_real_connect(conn.get(), target->host.c_str(), target->user.c_str(), target->password.c_str(),
                          db, target->port, nullptr, kFlags)) {
    return target->connect_error(conn.get());
  }
  if (Status tls = target->check_tls(conn.get()); !tls) return tls;
  if (Status s = target->create_tables ? create_tables(*target, conn.get(), options.op_timeout)
                                       : check_tables(*target, conn.get());
      !s) {
    return s;
  }
  std::string packet;
  if (Status s =
          run_blocking(*target, conn.get(), std::string(protocol::body("mysql/max_allowed_packet.sql")),
                       "cannot read max_allowed_packet", &packet);
      !s) {
    return s;
  }
  conn.reset();
  return std::unique_ptr<Store>(
      std::make_unique<MysqlStore>(std::move(*target), options, max_result_for_packet(packet)));
}

}  // namespace idem::mysql
