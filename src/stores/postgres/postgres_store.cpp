// The PostgreSQL store. One thread runs an io_context that owns a few non-blocking libpq
// connections in pipeline mode. Callers only enqueue; the io thread sends the queued
// operations as batches: each batch is a run of prepared statements followed by one Sync,
// so the server runs it as one transaction and one commit (group commit: one WAL flush
// for the batch). A batch's statements are sorted by the row they lock, so concurrent
// batches on different connections lock rows in one order and never deadlock. Answers
// wait for the batch's Sync: a `committed` is acknowledged only once the server has
// committed it (synchronous_commit, I8). Several batches may be in flight per connection.
//
// Failures (docs/stores.md): a statement error rolls its batch back and fails its
// operations (nothing happened; unavailable for transient causes such as a serialization
// failure); an operation never sent (no connection within op_timeout, a send that failed
// before its Sync) is unavailable; a connection lost after sending, or no answer within
// op_timeout, fails the operations in flight on it with deadline_exceeded (the outcome is
// unknown) and the connection is replaced with backoff (the server cancels a stuck
// statement by statement_timeout). Callbacks run
// on the io thread, never under a lock, exactly once.
#include "stores/postgres/postgres_store.h"

#include <algorithm>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>

#include "core/listing.h"
#include "core/state_machine.h"
#include "stores/postgres/postgres_ops.h"
#include "stores/postgres/postgres_target.h"
#include "stores/protocol/protocol_files.h"

namespace idem::postgres {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using OpPtr = std::unique_ptr<Op>;
using batching::SteadyClock;

constexpr std::size_t kConnections = 4;
// Statements per batch (one transaction): enough to amortise a commit's WAL flush, few
// enough that a failing batch fails few callers.
constexpr std::size_t kMaxBatch = 128;
constexpr std::size_t kBatchesInFlight = 2;  // per connection: one running, one waiting
constexpr auto kBackoffFirst = 20ms;
constexpr auto kBackoffMax = 2s;

std::int64_t micros(Duration d) { return d.count(); }

struct Batch {
  std::vector<OpPtr> ops;
  std::size_t next = 0;      // the op whose result comes next
  std::size_t setup = 0;     // a connection's setup: how many results (no ops)
  Status error;              // the first statement error; the transaction rolled back
  std::size_t error_at = 0;  // the op whose statement failed
};

struct Connection {
  explicit Connection(asio::io_context& io) : socket(io), timer(io) {}
  enum class State { down, connecting, setup, ready, backoff };

  PGconn* pg = nullptr;
  asio::posix::stream_descriptor socket;
  asio::steady_timer timer;  // reconnection backoff
  State state = State::down;
  std::uint64_t gen = 0;  // handlers of an older socket or connection do nothing
  std::deque<Batch> inflight;
  bool reading = false, writing = false;
  bool awaiting_null = false;   // after a statement's result, libpq reports its end
  bool connect_failed = false;  // the last attempt to connect failed
  SteadyClock::time_point connect_deadline{};
  SteadyClock::duration backoff = kBackoffFirst;
};

class PostgresStore final : public batching::BatchingStore<Op> {
 public:
  PostgresStore(Target target, const StoreOptions& options)
      : BatchingStore(options, unavailable("postgres: not connected yet")),
        target_(std::move(target)),
        statements_(statements(target_.prefix)) {
    for (std::size_t i = 0; i < kConnections; ++i) conns_.push_back(std::make_unique<Connection>(io_));
    start();
  }

  // Stops accepting; every operation already accepted gets its answer first.
  ~PostgresStore() override { stop(); }

  const StoreTraits& traits() const noexcept override {
    static constexpr StoreTraits kTraits{"postgres", /*native_expiry=*/false, /*durable=*/true,
                                         /*controllable_clock=*/false, /*ordered_list=*/true};
    return kTraits;
  }
  // A bytea and a protocol message each hold at most 1 GiB - 1 (the server's MaxAllocSize);
  // the result travels in binary, with the row's or the message's other values, which take
  // less than 64 KiB.
  std::uint64_t max_result_bytes() const noexcept override { return ((1ull << 30) - 1) - (64ull << 10); }

 protected:
  void do_begin(BeginArgs a, Callback<BeginOutcome> cb) override {
    auto order = lock_order('r', a.scope, a.key);
    submit<BeginOutcome>(Stmt::begin,
                         {std::move(a.scope), std::move(a.key), std::move(a.fingerprint),
                          int8_param(micros(a.lease)), int8_param(micros(a.retention)), std::move(a.owner)},
                         std::move(order), &read_begin, std::move(cb));
  }
  void do_commit(CommitArgs a, Callback<CommitOutcome> cb) override {
    auto order = lock_order('r', a.scope, a.key);
    submit<CommitOutcome>(Stmt::commit,
                          {std::move(a.scope), std::move(a.key), fence_param(a.fence),
                           int8_param(micros(a.retention)), std::move(a.result), std::move(a.over_uncertain)},
                          std::move(order), &read_commit, std::move(cb));
  }
  void do_release(ReleaseArgs a, Callback<ReleaseOutcome> cb) override {
    auto order = lock_order('r', a.scope, a.key);
    if (!a.restore_token) {
      return submit<ReleaseOutcome>(Stmt::release,
                                    {std::move(a.scope), std::move(a.key), fence_param(a.fence)},
                                    std::move(order), &read_release, std::move(cb));
    }
    submit<ReleaseOutcome>(Stmt::release_restore,
                           {std::move(a.scope), std::move(a.key), fence_param(a.fence),
                            std::move(a.restore_token->token), int8_param(micros(a.restore_token->ttl))},
                           std::move(order), &read_release, std::move(cb), /*alone=*/true);
  }
  void do_abandon(AbandonArgs a, Callback<ReleaseOutcome> cb) override {
    auto order = lock_order('r', a.scope, a.key);
    submit<ReleaseOutcome>(Stmt::abandon, {std::move(a.scope), std::move(a.key), std::move(a.owner)},
                           std::move(order), &read_release, std::move(cb));
  }
  void do_extend(ExtendArgs a, Callback<ExtendOutcome> cb) override {
    auto order = lock_order('r', a.scope, a.key);
    submit<ExtendOutcome>(
        Stmt::extend,
        {std::move(a.scope), std::move(a.key), fence_param(a.fence), int8_param(micros(a.lease))},
        std::move(order), &read_extend, std::move(cb));
  }
  void do_get(RecordId a, Callback<std::optional<Record>> cb) override {
    // A plain read locks nothing.
    submit<std::optional<Record>>(Stmt::get, {std::move(a.scope), std::move(a.key)}, std::string(), &read_get,
                                  std::move(cb));
  }
  void do_remove(RecordId a, Callback<bool> cb) override {
    auto order = lock_order('r', a.scope, a.key);
    submit<bool>(Stmt::remove, {std::move(a.scope), std::move(a.key)}, std::move(order), &read_remove,
                 std::move(cb));
  }
  // One statement of at most limit + 1 rows; a plain read locks nothing.
  void do_list(ListArgs a, Callback<ListPage> cb) override {
    auto after = core::decode_position(a.cursor);
    if (!after) return cb(after.status());
    const std::optional<std::string> end = core::prefix_end(a.key_prefix);
    std::int64_t flags = 0;
    if (a.scope) flags |= kListScope;
    if (a.state) flags |= kListState;
    if (end) flags |= kListKeyEnd;
    if (*after) flags |= kListAfter;
    std::vector<std::string> params{int8_param(flags),
                                    a.scope.value_or(""),
                                    a.state ? to_string(*a.state) : "",
                                    a.key_prefix,
                                    end.value_or(""),
                                    int8_param(*after ? micros((*after)->expires_at.time_since_epoch()) : 0),
                                    *after ? (*after)->scope : "",
                                    *after ? (*after)->key : "",
                                    int8_param(static_cast<std::int64_t>(a.limit + 1))};
    submit<ListPage>(Stmt::list, std::move(params), std::string(), &read_list,
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
    submit<std::string>(Stmt::issue_token, {std::move(a.scope), std::move(*token), int8_param(micros(a.ttl))},
                        std::move(order), &read_issue_token, std::move(cb));
  }
  void do_consume_token(TokenArgs a, Callback<ConsumeOutcome> cb) override {
    auto order = lock_order('t', a.scope, a.token);
    submit<ConsumeOutcome>(Stmt::consume_token, {std::move(a.scope), std::move(a.token)}, std::move(order),
                           &read_consume, std::move(cb));
  }
  void do_restore_token(RestoreTokenArgs a, Callback<RestoreOutcome> cb) override {
    auto order = lock_order('t', a.scope, a.token);
    submit<RestoreOutcome>(Stmt::restore_token,
                           {std::move(a.scope), std::move(a.token), int8_param(micros(a.ttl))},
                           std::move(order), &read_restore, std::move(cb));
  }

  void do_lock(LockArgs a, Callback<LockOutcome> cb) override {
    auto order = lock_order('l', a.name);
    submit<LockOutcome>(Stmt::lock, {std::move(a.name), std::move(a.owner), int8_param(micros(a.ttl))},
                        std::move(order), &read_lock, std::move(cb));
  }
  void do_unlock(UnlockArgs a, Callback<UnlockOutcome> cb) override {
    auto order = lock_order('l', a.name);
    submit<UnlockOutcome>(Stmt::unlock, {std::move(a.name), std::move(a.owner)}, std::move(order),
                          &read_unlock, std::move(cb));
  }
  void do_extend_lock(LockArgs a, Callback<LockExtendOutcome> cb) override {
    auto order = lock_order('l', a.name);
    submit<LockExtendOutcome>(Stmt::extend_lock,
                              {std::move(a.name), std::move(a.owner), int8_param(micros(a.ttl))},
                              std::move(order), &read_extend_lock, std::move(cb));
  }

  void do_ping(Callback<Done> cb) override {
    submit<Done>(Stmt::ping, {}, std::string(), &read_ping, std::move(cb));
  }

 private:
  // A fence beyond int8 matches no row (fences stay below 2^53).
  static std::string fence_param(Fence f) {
    return int8_param(f > kMaxFence ? -1 : static_cast<std::int64_t>(f));
  }

  // ---- callers' side -------------------------------------------------------------------

  template <class T>
  void submit(Stmt stmt, std::vector<std::string> params, std::string order, Reader<T> reader, Callback<T> cb,
              bool alone = false) {
    auto op = std::make_unique<TypedOp<T>>(reader, std::move(cb), stmt, std::move(params), std::move(order));
    op->alone = alone;
    enqueue(std::move(op));
  }

  // ---- the io thread: the queue ----------------------------------------------------------

  void start_connections() override {
    for (auto& c : conns_) start_connect(*c);
  }

  // Sends queued operations on the least busy ready connections, in batches.
  void dispatch() override {
    while (!queue_.empty()) {
      Connection* best = nullptr;
      for (auto& c : conns_) {
        if (c->state != Connection::State::ready || c->inflight.size() >= kBatchesInFlight) continue;
        if (!best || c->inflight.size() < best->inflight.size()) best = c.get();
      }
      if (!best) return;
      Batch batch;
      const auto now = SteadyClock::now();
      while (!queue_.empty() && batch.ops.size() < kMaxBatch) {
        if (queue_.front()->alone && !batch.ops.empty()) break;
        OpPtr op = std::move(queue_.front());
        queue_.pop_front();
        if (op->deadline <= now) {
          op->fail(not_run());
          continue;
        }
        const bool alone = op->alone;
        batch.ops.push_back(std::move(op));
        if (alone) break;
      }
      if (batch.ops.empty()) continue;
      std::stable_sort(batch.ops.begin(), batch.ops.end(),
                       [](const OpPtr& a, const OpPtr& b) { return a->lock_order < b->lock_order; });
      send(*best, std::move(batch));
    }
  }

  void send(Connection& c, Batch batch) {
    bool sent = true;
    for (auto& op : batch.ops) {
      ++op->runs;
      const auto& st = statements_[static_cast<std::size_t>(op->stmt)];
      std::vector<const char*> values;
      std::vector<int> lengths, formats;
      for (const auto& p : op->params) {
        values.push_back(p.data());
        lengths.push_back(static_cast<int>(p.size()));
        formats.push_back(1);
      }
      const int n = static_cast<int>(values.size());
      sent = sent && PQsendQueryPrepared(c.pg, st.name.c_str(), n, values.data(), lengths.data(),
                                         formats.data(), /*resultFormat=*/1) == 1;
    }
    sent = sent && PQpipelineSync(c.pg) == 1;
    if (!sent) {
      // Without its Sync the batch's transaction cannot have committed: nothing applied.
      const std::string reason = PQerrorMessage(c.pg);
      for (auto& op : batch.ops)
        op->fail(unavailable(target_.message("not sent; nothing was applied", reason)));
      return broken(c, "connection lost", reason);
    }
    c.inflight.push_back(std::move(batch));
    flush(c);
  }

  bool reachable() const override {
    return std::any_of(conns_.begin(), conns_.end(), [](const auto& c) {
      return c->state != Connection::State::backoff || !c->connect_failed;
    });
  }

  std::string message(std::string_view what, std::string_view reason) const override {
    return target_.message(what, reason);
  }

  // ---- the io thread: connections --------------------------------------------------------

  void start_connect(Connection& c) {
    if (shutting_down_) return;
    c.pg = target_.connect_start();
    if (!c.pg || PQstatus(c.pg) == CONNECTION_BAD) return connect_failed(c, target_.connect_error(c.pg));
    c.state = Connection::State::connecting;
    c.connect_deadline = SteadyClock::now() + op_timeout_;
    continue_connect(c, PGRES_POLLING_WRITING);
  }

  void continue_connect(Connection& c, PostgresPollingStatusType polled) {
    switch (polled) {
      case PGRES_POLLING_OK:
        return start_setup(c);
      case PGRES_POLLING_FAILED:
        return connect_failed(c, target_.connect_error(c.pg));
      default:
        break;
    }
    attach_socket(c);
    const auto wait = polled == PGRES_POLLING_READING ? asio::posix::stream_descriptor::wait_read
                                                      : asio::posix::stream_descriptor::wait_write;
    c.socket.async_wait(wait, [this, &c, gen = c.gen](boost::system::error_code ec) {
      if (ec || gen != c.gen) return;
      continue_connect(c, PQconnectPoll(c.pg));
    });
  }

  // libpq may move to another socket while connecting (another address of the host).
  void attach_socket(Connection& c) {
    const int fd = PQsocket(c.pg);
    if (c.socket.is_open() && c.socket.native_handle() == fd) return;
    detach_socket(c);
    c.socket.assign(fd);
  }

  void detach_socket(Connection& c) {
    ++c.gen;
    c.reading = c.writing = false;
    if (!c.socket.is_open()) return;
    c.socket.cancel();
    c.socket.release();  // libpq owns the descriptor
  }

  // Prepares every statement and sets the server-side statement timeout, as one batch.
  void start_setup(Connection& c) {
    attach_socket(c);
    bool ok = PQsetnonblocking(c.pg, 1) == 0 && PQenterPipelineMode(c.pg) == 1;
    // The server gives up on a statement a little after we do, so nothing it holds stays
    // stuck behind a connection we abandoned.
    const std::string timeout = std::to_string((op_timeout_ + 1s).count() / 1000) + "ms";
    const char* value = timeout.c_str();
    static const std::string kSession(protocol::body("postgres/session.sql"));
    ok = ok && PQsendQueryParams(c.pg, kSession.c_str(), 1, nullptr, &value, nullptr, nullptr, 0) == 1;
    for (const auto& st : statements_) {
      ok = ok && PQsendPrepare(c.pg, st.name.c_str(), st.sql.c_str(), static_cast<int>(st.types.size()),
                               st.types.data()) == 1;
    }
    ok = ok && PQpipelineSync(c.pg) == 1;
    if (!ok) return connect_failed(c, unavailable(target_.message("cannot set up", PQerrorMessage(c.pg))));
    c.state = Connection::State::setup;
    Batch setup;
    setup.setup = 1 + statements_.size();
    c.inflight.push_back(std::move(setup));
    start_reading(c);
    flush(c);
  }

  void start_reading(Connection& c) {
    if (c.reading) return;
    c.reading = true;
    c.socket.async_wait(asio::posix::stream_descriptor::wait_read,
                        [this, &c, gen = c.gen](boost::system::error_code ec) {
                          if (ec || gen != c.gen) return;
                          c.reading = false;
                          if (PQconsumeInput(c.pg) != 1 || PQstatus(c.pg) == CONNECTION_BAD) {
                            // What arrived before the end still counts: a server that
                            // terminates the session says so first (57P01), and the batch
                            // that error aborted applied nothing.
                            const std::string reason = PQerrorMessage(c.pg);
                            process_results(c);
                            if (gen == c.gen) broken(c, "connection lost", reason);
                            return;
                          }
                          process_results(c);
                          if (gen == c.gen) start_reading(c);
                        });
  }

  void flush(Connection& c) {
    const int r = PQflush(c.pg);
    if (r < 0) return broken(c, "connection lost", PQerrorMessage(c.pg));
    if (r == 0 || c.writing) return;
    c.writing = true;
    c.socket.async_wait(asio::posix::stream_descriptor::wait_write,
                        [this, &c, gen = c.gen](boost::system::error_code ec) {
                          if (ec || gen != c.gen) return;
                          c.writing = false;
                          flush(c);
                        });
  }

  void process_results(Connection& c) {
    const auto gen = c.gen;
    while (gen == c.gen && !c.inflight.empty() && PQisBusy(c.pg) == 0) {
      ResultPtr res(PQgetResult(c.pg));
      if (!res) {
        if (!std::exchange(c.awaiting_null, false)) return;  // nothing more for now
        continue;
      }
      on_result(c, res.get());
    }
  }

  void on_result(Connection& c, const PGresult* res) {
    Batch& b = c.inflight.front();
    const ExecStatusType status = PQresultStatus(res);
    if (status == PGRES_PIPELINE_SYNC) {
      c.awaiting_null = false;
      Batch done = std::move(b);
      c.inflight.pop_front();
      return done.setup > 0 ? finish_setup(c, std::move(done)) : finish_batch(std::move(done));
    }
    c.awaiting_null = true;
    const std::size_t at = b.next++;
    if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK) {
      if (at < b.ops.size() && !b.ops[at]->answered()) b.ops[at]->read(res);
    } else if (status != PGRES_PIPELINE_ABORTED && b.error.is_ok()) {
      // libpq's own report of a lost connection (no SQLSTATE) proves nothing about the
      // batch: broken() answers it as outcome unknown.
      if (PQstatus(c.pg) == CONNECTION_BAD && !PQresultErrorField(res, PG_DIAG_SQLSTATE)) return;
      b.error =
          target_.statement_error(res, b.setup > 0 ? "cannot set up the connection" : "statement failed");
      b.error_at = at;
    }
  }

  void finish_setup(Connection& c, Batch done) {
    if (done.error.is_ok()) {
      c.state = Connection::State::ready;
      c.connect_failed = false;
      c.backoff = kBackoffFirst;
      return dispatch();
    }
    connect_failed(c, std::move(done.error));
  }

  // The batch's transaction has ended: committed, or rolled back by the error of the
  // statement at error_at. That operation gets the error; the others did not happen and
  // run again, so one bad call does not fail its neighbours.
  void finish_batch(Batch done) {
    settle(done.ops, done.error, [&](std::size_t i) { return i == done.error_at; });
    dispatch();
    maybe_stop();
  }

  // Fails the operations in flight (their outcome is unknown), closes the connection and
  // reconnects after a short pause.
  void broken(Connection& c, std::string_view what, std::string_view reason) {
    fail_inflight(c, what, reason);
    close(c);
    reconnect_later(c, false);
    maybe_stop();
  }

  void connect_failed(Connection& c, Status why) {
    last_error_ = why;
    fail_inflight(c, "cannot connect", why.message());
    close(c);
    reconnect_later(c, true);
    fail_queue_if_unreachable();
    maybe_stop();
  }

  // The connection ended with these batches sent and not answered. A batch whose
  // transaction had already failed rolled back: nothing of it was applied. Any other may
  // have committed just before the answer was lost: its outcome is unknown
  // (docs/stores.md, "When a store call fails").
  void fail_inflight(Connection& c, std::string_view what, std::string_view reason) {
    auto batches = std::move(c.inflight);
    c.inflight.clear();
    for (auto& b : batches) {
      for (std::size_t i = 0; i < b.ops.size(); ++i) {
        if (!b.error.is_ok()) {
          b.ops[i]->fail(i == b.error_at ? b.error
                                         : unavailable(target_.message(
                                               "rolled back with its batch; nothing was applied", reason)));
        } else {
          b.ops[i]->fail(deadline_exceeded(
              target_.message(std::string(what) + " after sending; the outcome is unknown", reason)));
        }
      }
    }
  }

  void close(Connection& c) {
    detach_socket(c);
    c.awaiting_null = false;
    if (c.pg) PQfinish(c.pg);
    c.pg = nullptr;
    c.state = Connection::State::down;
  }

  void reconnect_later(Connection& c, bool after_failure) {
    c.state = Connection::State::backoff;
    c.connect_failed = after_failure;
    if (shutting_down_) return;
    c.timer.expires_after(c.backoff);
    if (after_failure) c.backoff = std::min<SteadyClock::duration>(c.backoff * 2, kBackoffMax);
    c.timer.async_wait([this, &c](boost::system::error_code ec) {
      if (!ec && c.state == Connection::State::backoff) start_connect(c);
    });
  }

  // ---- the io thread: deadlines, sweeps, shutdown ----------------------------------------

  void check_connections(SteadyClock::time_point now) override {
    for (auto& c : conns_) {
      if ((c->state == Connection::State::connecting || c->state == Connection::State::setup) &&
          now >= c->connect_deadline) {
        connect_failed(*c, unavailable(target_.message("cannot connect", "no answer within op_timeout")));
        continue;
      }
      if (!overdue(*c, now)) continue;
      fail_inflight(*c, "no answer within op_timeout", "the server may still run it");
      close(*c);
      reconnect_later(*c, false);
    }
  }

  static bool overdue(const Connection& c, SteadyClock::time_point now) {
    for (const auto& b : c.inflight) {
      for (const auto& op : b.ops) {
        if (!op->answered() && op->deadline <= now) return true;
      }
    }
    return false;
  }

  bool busy() const override {
    return std::any_of(conns_.begin(), conns_.end(), [](const auto& c) { return !c->inflight.empty(); });
  }

  void close_connections() override {
    for (auto& c : conns_) {
      close(*c);
      c->timer.cancel();
    }
  }

  OpPtr make_sweep(Callback<std::uint64_t> cb) override { return std::make_unique<SweepOp>(std::move(cb)); }

  const Target target_;
  const std::array<Statement, kStatementCount> statements_;
  std::vector<std::unique_ptr<Connection>> conns_;
};

Status create_tables(const Target& t, PGconn* conn) {
  ResultPtr created(PQexec(conn, schema_sql(t.prefix).c_str()));
  if (PQresultStatus(created.get()) != PGRES_COMMAND_OK) {
    return t.statement_error(created.get(), "cannot create the tables");
  }
  return Status::ok();
}

// create_tables=false: the tables must be there, as this version uses them.
Status check_tables(const Target& t, PGconn* conn) {
  ResultPtr checked(PQexec(conn, check_schema_sql(t.prefix).c_str()));
  if (PQresultStatus(checked.get()) == PGRES_TUPLES_OK) return Status::ok();
  const char* state = PQresultErrorField(checked.get(), PG_DIAG_SQLSTATE);
  const std::string code = state ? state : "";
  if (code != "42P01" && code != "42703") return t.statement_error(checked.get(), "cannot check the tables");
  const char* primary = PQresultErrorField(checked.get(), PG_DIAG_MESSAGE_PRIMARY);
  const std::string why = primary ? primary : "";
  return failed_precondition(
      t.message("create_tables=false, and the tables " + t.prefix + "records, " + t.prefix + "tokens, " +
                    t.prefix + "locks are missing or older than this version",
                why + "; create them with the DDL that `idem schema --store` prints for "
                      "this URI"));
}

}  // namespace

Result<std::unique_ptr<Store>> open(std::string_view uri, const StoreOptions& options) {
  auto target = parse_target(uri);
  if (!target) return target.status();
  if (options.op_timeout.count() <= 0) return invalid_argument("postgres: op_timeout must be greater than 0");
  if (options.sweep_interval.count() < 0)
    return invalid_argument("postgres: sweep_interval must not be negative");

  // Connect once, at once: a wrong host, password or database shows here, and the tables
  // are there before the first operation.
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(target->connect_blocking(options.op_timeout), &PQfinish);
  if (!conn || PQstatus(conn.get()) != CONNECTION_OK) return target->connect_error(conn.get());
  if (Status s =
          target->create_tables ? create_tables(*target, conn.get()) : check_tables(*target, conn.get());
      !s) {
    return s;
  }
  conn.reset();
  return std::unique_ptr<Store>(std::make_unique<PostgresStore>(std::move(*target), options));
}

}  // namespace idem::postgres
