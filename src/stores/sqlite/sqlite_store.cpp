// The SQLite store (docs/design.md, "SQLite in detail"). One writer thread owns the connection (sqlite_db.h)
// and group-commits: callers only enqueue; the writer drains the queue, applies up to kMaxBatch operations in
// one BEGIN IMMEDIATE ... COMMIT — each reads its row, lets the shared state machine (core/state_machine.h)
// decide, and writes or deletes the row — and answers them only after COMMIT returned, outside any lock, so a
// callback may call the store again; the answers to coroutine callers leave in one post per executor and
// transaction (idem/detail/completion_batch.h). With WAL and synchronous=NORMAL a returned COMMIT is in the
// operating system's hands and survives a kill -9 of this process (I8); synchronous=FULL also survives a
// power cut.
//
// Fences come from one FenceSource for the whole database; its high-water mark is
// persisted in idem_meta once per transaction that raised it, so fences never repeat
// across restarts, removals and clocks stepping back.
//
// foreign_writes() counts the commits of other connections (PRAGMA data_version on the
// writer's connection) without waiting for a batch: while the writer holds the write lock
// it has read data_version after taking it, and nobody else can commit until it lets go, so
// the count it published is exact. Otherwise, when the WAL index's stamp (a commit counter in
// the shared memory every connection maps) is still what it was when the connection last
// looked, nobody has committed since and the count stands, with no lock and no system call;
// failing that, the caller asks the connection itself, which waits at most for the end of
// one COMMIT.
#include "stores/sqlite/sqlite_store.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <variant>
#include <vector>

#include "core/listing.h"
#include "core/state_machine.h"
#include "idem/detail/completion_batch.h"
#include "stores/sqlite/sqlite_db.h"
#include "util/uri_query.h"

namespace idem::sqlite {
namespace {

using core::Effect;
using SteadyClock = std::chrono::steady_clock;

// Operations per transaction: large enough to amortise COMMIT, small enough that one
// failing transaction fails few callers and answers arrive in steady steps.
constexpr std::size_t kMaxBatch = 256;
// Rows per table and sweep step; each step is its own short transaction (records may
// hold results of a megabyte, whose pages a delete walks).
constexpr int kSweepChunk = 128;
// While operations keep arriving, a running sweep still takes one step this often.
constexpr auto kSweepStarvation = std::chrono::milliseconds(5);
// The checkpointer copies the WAL back each time it grew by this many frames (pages)...
constexpr int kCheckpointEvery = 1000;
// ...and past this size (a reader holding the WAL, or a checkpointer falling behind) the
// writer checkpoints itself, so the WAL stays bounded.
constexpr int kWalFallbackFrames = 16000;
// The fence high-water mark is persisted ahead of the fences handed out, by this many
// (fences follow the clock in µs: a write of idem_meta about every 0.1 s instead of one
// per transaction that hands out fences)...
constexpr Fence kFenceReserve = 100'000;
// ...unless another connection committed this recently: two processes adopting each
// other's reserved marks would push their fences a reserve ahead on every turn.
constexpr auto kExactMarkAfterOthers = std::chrono::seconds(10);

// One queued operation: its arguments, its callback and, once run, its answer.
template <class Args, class Out>
struct Op {
  Args args;
  Callback<Out> cb;
  Out out{};
};
struct NoArgs {};

using BeginOp = Op<BeginArgs, BeginOutcome>;
using CommitOp = Op<CommitArgs, CommitOutcome>;
using ReleaseOp = Op<ReleaseArgs, ReleaseOutcome>;
using AbandonOp = Op<AbandonArgs, ReleaseOutcome>;
using ExtendOp = Op<ExtendArgs, ExtendOutcome>;
using GetOp = Op<RecordId, std::optional<Record>>;
using RemoveOp = Op<RecordId, bool>;
using SweepOp = Op<NoArgs, std::uint64_t>;
struct ListQuery {
  ListArgs args;
  std::optional<core::ListPosition> after;
};
using ListOp = Op<ListQuery, ListPage>;
using IssueTokenOp = Op<IssueTokenArgs, std::string>;  // `out` holds the token from the start
using ConsumeOp = Op<TokenArgs, ConsumeOutcome>;
using RestoreOp = Op<RestoreTokenArgs, RestoreOutcome>;
using LockOp = Op<LockArgs, LockOutcome>;
using UnlockOp = Op<UnlockArgs, UnlockOutcome>;
using ExtendLockOp = Op<LockArgs, LockExtendOutcome>;
using PingOp = Op<NoArgs, Done>;

struct Queued {
  template <class O>
  Queued(O&& o, SteadyClock::time_point t) : op(std::forward<O>(o)), enqueued(t) {}

  std::variant<BeginOp, CommitOp, ReleaseOp, AbandonOp, ExtendOp, GetOp, RemoveOp, SweepOp, IssueTokenOp,
               ConsumeOp, RestoreOp, LockOp, UnlockOp, ExtendLockOp, PingOp, ListOp>
      op;
  SteadyClock::time_point enqueued;
  bool timed_out = false;  // waited longer than op_timeout: not run
};

class SqliteStore final : public Store {
 public:
  SqliteStore(std::unique_ptr<Database> db, Fence high_water, std::shared_ptr<const Clock> clock,
              const StoreOptions& options)
      : db_(std::move(db)),
        clock_(std::move(clock)),
        op_timeout_(options.op_timeout),
        sweep_interval_(options.sweep_interval),
        max_result_bytes_(db_->max_row_bytes() / 2),
        fences_(high_water),
        persisted_high_water_(high_water),
        next_sweep_(SteadyClock::now() + sweep_interval_) {
    checkpointer_ = std::thread([this] { run_checkpointer(); });
    writer_ = std::thread([this] { run(); });
  }

  // Stops accepting, finishes every queued operation (and any sweep a caller waits for),
  // then closes the database.
  ~SqliteStore() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
    writer_.join();
    {
      std::lock_guard lock(checkpoint_mu_);
      checkpoint_stop_ = true;
    }
    checkpoint_cv_.notify_one();
    checkpointer_.join();
  }

  const StoreTraits& traits() const noexcept override {
    static constexpr StoreTraits kTraits{"sqlite", /*native_expiry=*/false, /*durable=*/true,
                                         /*controllable_clock=*/true, /*ordered_list=*/true};
    return kTraits;
  }

  // Half the connection's length limit (SQLITE_LIMIT_LENGTH, 1,000,000,000 bytes unless
  // SQLite was built otherwise), which bounds a row: the rest leaves room for its other
  // columns.
  std::uint64_t max_result_bytes() const noexcept override { return max_result_bytes_; }

  std::optional<std::uint64_t> foreign_writes() const noexcept override {
    if (write_locked_.load(std::memory_order_acquire)) return foreign_.load(std::memory_order_acquire);
    // No commit to the file since the last look: the count stands.
    const auto stamp = db_->wal_index_stamp();
    if (stamp && *stamp == looked_at_.load(std::memory_order_acquire)) {
      return foreign_.load(std::memory_order_acquire);
    }
    std::lock_guard lock(conn_mu_);
    // Read before looking: a commit after this read changes the stamp, and one before it is
    // in what data_version tells.
    const auto before = db_->wal_index_stamp();
    if (!observe_others()) return std::nullopt;  // cannot tell
    looked_at_.store(before.value_or(0), std::memory_order_release);
    return foreign_.load(std::memory_order_relaxed);
  }

 protected:
  void do_begin(BeginArgs a, Callback<BeginOutcome> cb) override {
    submit(BeginOp{std::move(a), std::move(cb)});
  }
  void do_commit(CommitArgs a, Callback<CommitOutcome> cb) override {
    submit(CommitOp{std::move(a), std::move(cb)});
  }
  void do_release(ReleaseArgs a, Callback<ReleaseOutcome> cb) override {
    submit(ReleaseOp{std::move(a), std::move(cb)});
  }
  void do_abandon(AbandonArgs a, Callback<ReleaseOutcome> cb) override {
    submit(AbandonOp{std::move(a), std::move(cb)});
  }
  void do_extend(ExtendArgs a, Callback<ExtendOutcome> cb) override {
    submit(ExtendOp{std::move(a), std::move(cb)});
  }
  void do_get(RecordId a, Callback<std::optional<Record>> cb) override {
    submit(GetOp{std::move(a), std::move(cb)});
  }
  void do_remove(RecordId a, Callback<bool> cb) override { submit(RemoveOp{std::move(a), std::move(cb)}); }
  void do_sweep(Callback<std::uint64_t> cb) override { submit(SweepOp{{}, std::move(cb)}); }
  void do_list(ListArgs a, Callback<ListPage> cb) override {
    auto after = core::decode_position(a.cursor);
    if (!after) return cb(after.status());
    submit(ListOp{{std::move(a), std::move(*after)}, std::move(cb)});
  }
  void do_issue_token(IssueTokenArgs a, Callback<std::string> cb) override {
    auto token = core::random_token();
    if (!token) return cb(token.status());
    submit(IssueTokenOp{std::move(a), std::move(cb), std::move(*token)});
  }
  void do_consume_token(TokenArgs a, Callback<ConsumeOutcome> cb) override {
    submit(ConsumeOp{std::move(a), std::move(cb)});
  }
  void do_restore_token(RestoreTokenArgs a, Callback<RestoreOutcome> cb) override {
    submit(RestoreOp{std::move(a), std::move(cb)});
  }
  void do_lock(LockArgs a, Callback<LockOutcome> cb) override { submit(LockOp{std::move(a), std::move(cb)}); }
  void do_unlock(UnlockArgs a, Callback<UnlockOutcome> cb) override {
    submit(UnlockOp{std::move(a), std::move(cb)});
  }
  void do_extend_lock(LockArgs a, Callback<LockExtendOutcome> cb) override {
    submit(ExtendLockOp{std::move(a), std::move(cb)});
  }
  void do_ping(Callback<Done> cb) override { submit(PingOp{{}, std::move(cb)}); }

 private:
  // ---- callers' side -------------------------------------------------------------------

  template <class O>
  void submit(O&& op) {
    const auto now = SteadyClock::now();
    std::unique_lock lock(mu_);
    if (stopping_) {
      lock.unlock();
      return op.cb(unavailable("sqlite '" + db_->path() + "': the store is closing"));
    }
    queue_.emplace_back(std::move(op), now);
    // Only an idle writer needs a wake-up; a busy one finds the operation on its next turn.
    const bool wake = std::exchange(idle_, false);
    lock.unlock();
    if (wake) cv_.notify_one();
  }

  // ---- the writer thread ---------------------------------------------------------------

  void run() {
    std::unique_lock lock(mu_);
    for (;;) {
      const bool periodic_due = !stopping_ && sweep_interval_.count() > 0 && !sweep_periodic_ &&
                                sweepers_.empty() && SteadyClock::now() >= next_sweep_;
      const bool sweeping = !sweepers_.empty() || (sweep_periodic_ && !stopping_);
      if (queue_.empty() && !periodic_due && !sweeping) {
        if (stopping_) break;
        idle_ = true;
        if (sweep_interval_.count() > 0) {
          cv_.wait_until(lock, next_sweep_);
        } else {
          cv_.wait(lock);
        }
        idle_ = false;
        continue;
      }
      batch_.swap(queue_);
      lock.unlock();

      if (periodic_due) {
        sweep_periodic_ = true;
        next_sweep_ = SteadyClock::now() + sweep_interval_;
      }
      for (std::size_t i = 0; i < batch_.size(); i += kMaxBatch) {
        run_transaction(std::span(batch_).subspan(i, std::min(kMaxBatch, batch_.size() - i)));
      }
      // Expiry runs between batches, in short steps, so queued operations barely notice.
      if ((!sweepers_.empty() || sweep_periodic_) &&
          (batch_.empty() || SteadyClock::now() - last_sweep_step_ >= kSweepStarvation)) {
        sweep_step();
      }
      batch_.clear();
      lock.lock();
    }
  }

  void run_transaction(std::span<Queued> ops) {
    const auto started = SteadyClock::now();
    bool any = false;
    for (Queued& q : ops) {
      q.timed_out = started - q.enqueued > op_timeout_;
      any = any || !q.timed_out;
    }
    const Status committed = any ? transact(ops) : Status::ok();
    // Coroutine callers' completions leave with one post per executor when this goes.
    detail::CompletionBatch answers;
    for (Queued& q : ops) {
      std::visit(
          [&](auto& op) {
            if (q.timed_out) {
              op.cb(unavailable("sqlite '" + db_->path() + "': waited longer than op_timeout (" +
                                std::to_string(op_timeout_.count() / 1000) + " ms) in the queue; not run"));
            } else if (!committed) {
              op.cb(committed);
            } else {
              answer(op);
            }
          },
          q.op);
    }
  }

  // All of `ops` (but the timed-out ones) in one transaction; on any error it is rolled
  // back and the error is every operation's answer.
  Status transact(std::span<Queued> ops) {
    std::lock_guard conn(conn_mu_);
    Status s = db_->begin_transaction();
    if (s) s = adopt_others_high_water();
    // Holding the write lock, having looked: nobody else can commit until COMMIT.
    if (s) write_locked_.store(true, std::memory_order_release);
    for (Queued& q : ops) {
      if (!s) break;
      if (!q.timed_out) s = std::visit([&](auto& op) { return execute(op, clock_->now()); }, q.op);
    }
    // The persisted mark stays at or above every fence a committed transaction handed out.
    Fence mark = persisted_high_water_;
    if (s && fences_.high_water() > mark) {
      const bool shared = others_seen_ && SteadyClock::now() - *others_seen_ < kExactMarkAfterOthers;
      mark = fences_.high_water() + (shared ? 0 : kFenceReserve);
      s = db_->save_high_water(mark);
    }
    write_locked_.store(false, std::memory_order_release);
    if (s) s = db_->commit();
    if (!s) {
      db_->rollback();
      return s;
    }
    persisted_high_water_ = mark;
    after_commit();
    return Status::ok();
  }

  // Another process (idem CLI, a second gateway) may have handed out fences since our
  // last transaction; continue above its high-water mark.
  Status adopt_others_high_water() {
    if (auto s = observe_others(); !s) return s;
    if (!std::exchange(others_wrote_, false)) return Status::ok();
    others_seen_ = SteadyClock::now();
    auto theirs = db_->load_persisted_high_water();
    if (!theirs) return theirs.status();
    fences_.raise(*theirs);
    return Status::ok();
  }

  // Under conn_mu_: notes whether another connection committed since the last look.
  Status observe_others() const {
    auto changed = db_->changed_by_others();
    if (!changed) return changed.status();
    if (*changed) {
      others_wrote_ = true;
      foreign_.fetch_add(1, std::memory_order_release);
    }
    return Status::ok();
  }

  template <class O>
  void answer(O& op) {
    op.cb(std::move(op.out));
  }
  void answer(SweepOp& op) { sweepers_.push_back({std::move(op.cb), 0}); }  // answered when it ends

  // ---- each operation: load, decide, persist -------------------------------------------

  Status execute(BeginOp& op, TimePoint now) {
    if (auto s = load_record(op.args.scope, op.args.key); !s) return s;
    auto d = core::apply_begin(record_, op.args, now, fences_);
    op.out = std::move(d.outcome);
    return persist_record(d.effect);
  }
  Status execute(CommitOp& op, TimePoint now) {
    if (auto s = load_record(op.args.scope, op.args.key); !s) return s;
    return persist_record(core::apply_commit(record_, std::move(op.args), now, op.out));
  }
  Status execute(ReleaseOp& op, TimePoint now) {
    if (auto s = load_record(op.args.scope, op.args.key); !s) return s;
    if (auto s = persist_record(core::apply_release(record_, op.args, now, op.out)); !s) return s;
    if (!op.args.restore_token || op.out != ReleaseOutcome::released) return Status::ok();
    // In the same transaction: the token is re-armed exactly when the claim went.
    const std::string& token = op.args.restore_token->token;
    if (auto s = load_token(op.args.scope, token); !s) return s;
    return persist_token(core::apply_restore_after_release(token_, op.args, now), op.args.scope, token);
  }
  Status execute(AbandonOp& op, TimePoint now) {
    if (auto s = load_record(op.args.scope, op.args.key); !s) return s;
    return persist_record(core::apply_abandon(record_, op.args, now, op.out));
  }
  Status execute(ExtendOp& op, TimePoint now) {
    if (auto s = load_record(op.args.scope, op.args.key); !s) return s;
    return persist_record(core::apply_extend(record_, op.args, now, op.out));
  }
  Status execute(GetOp& op, TimePoint now) {
    if (auto s = load_record(op.args.scope, op.args.key); !s) return s;
    if (record_ && !core::expired(*record_, now)) op.out = std::move(record_);
    return Status::ok();
  }
  Status execute(RemoveOp& op, TimePoint now) {
    if (auto s = load_record(op.args.scope, op.args.key); !s) return s;
    return persist_record(core::apply_remove(record_, now, op.out));
  }
  Status execute(SweepOp&, TimePoint) { return Status::ok(); }
  // One statement of at most limit + 1 rows, read in the writer's transaction.
  Status execute(ListOp& op, TimePoint now) {
    std::vector<Record> rows;
    const ListArgs& a = op.args.args;
    if (auto s = db_->list_records(a, op.args.after, now, a.limit + 1, rows); !s) return s;
    op.out = core::make_page(std::move(rows), a.limit);
    return Status::ok();
  }
  Status execute(IssueTokenOp& op, TimePoint now) {
    return db_->save_token(op.args.scope, op.out, core::issue_token_entry(op.args, now), /*exists=*/false);
  }
  Status execute(ConsumeOp& op, TimePoint now) {
    if (auto s = load_token(op.args.scope, op.args.token); !s) return s;
    return persist_token(core::apply_consume(token_, now, op.out), op.args.scope, op.args.token);
  }
  Status execute(RestoreOp& op, TimePoint now) {
    if (auto s = load_token(op.args.scope, op.args.token); !s) return s;
    return persist_token(core::apply_restore(token_, op.args, now, op.out), op.args.scope, op.args.token);
  }
  Status execute(LockOp& op, TimePoint now) {
    if (auto s = load_lock(op.args.name); !s) return s;
    return persist_lock(core::apply_lock(lock_, op.args, now, fences_, op.out), op.args.name);
  }
  Status execute(UnlockOp& op, TimePoint now) {
    if (auto s = load_lock(op.args.name); !s) return s;
    return persist_lock(core::apply_unlock(lock_, op.args, now, op.out), op.args.name);
  }
  Status execute(ExtendLockOp& op, TimePoint now) {
    if (auto s = load_lock(op.args.name); !s) return s;
    return persist_lock(core::apply_extend_lock(lock_, op.args, now, op.out), op.args.name);
  }
  // BEGIN IMMEDIATE and COMMIT around it prove that the file can be locked for writing.
  Status execute(PingOp&, TimePoint) { return Status::ok(); }

  // Each load remembers whether (and where) the row exists, for the persist that follows.
  Status load_record(std::string_view scope, std::string_view key) {
    return db_->load_record(scope, key, record_, record_rowid_);
  }
  Status persist_record(Effect e) {
    switch (e) {
      case Effect::none:
        return Status::ok();
      case Effect::write:
        return db_->save_record(*record_, record_rowid_);
      case Effect::erase:
        return db_->erase_record(record_rowid_);
    }
    return Status::ok();
  }
  Status load_token(std::string_view scope, std::string_view token) {
    auto s = db_->load_token(scope, token, token_);
    token_exists_ = token_.has_value();
    return s;
  }
  Status persist_token(Effect e, std::string_view scope, std::string_view token) {
    switch (e) {
      case Effect::none:
        return Status::ok();
      case Effect::write:
        return db_->save_token(scope, token, *token_, token_exists_);
      case Effect::erase:
        return db_->erase_token(scope, token);
    }
    return Status::ok();
  }
  Status load_lock(std::string_view name) {
    auto s = db_->load_lock(name, lock_);
    lock_exists_ = lock_.has_value();
    return s;
  }
  Status persist_lock(Effect e, std::string_view name) {
    switch (e) {
      case Effect::none:
        return Status::ok();
      case Effect::write:
        return db_->save_lock(name, *lock_, lock_exists_);
      case Effect::erase:
        return db_->erase_lock(name);
    }
    return Status::ok();
  }

  // ---- expiry --------------------------------------------------------------------------

  // One short transaction deleting up to kSweepChunk expired rows per table. The sweep
  // ends when a step finds fewer than that everywhere; then every caller of sweep() waiting
  // for it learns how many records went since it asked.
  void sweep_step() {
    last_sweep_step_ = SteadyClock::now();
    SweepCounts n;
    Status s;
    {
      std::lock_guard conn(conn_mu_);
      s = db_->begin_transaction();
      if (s) s = db_->sweep_step(clock_->now(), kSweepChunk, n);
      if (s) s = db_->commit();
      if (s) {
        after_commit();
      } else {
        db_->rollback();
      }
    }
    const bool finished = !s || (n.records < kSweepChunk && n.tokens < kSweepChunk && n.locks < kSweepChunk);
    for (Sweeper& w : sweepers_) w.records += n.records;
    if (!finished) return;
    sweep_periodic_ = false;
    auto waiting = std::move(sweepers_);
    sweepers_.clear();
    for (Sweeper& w : waiting) {
      if (s) {
        w.cb(w.records);
      } else {
        w.cb(s);
      }
    }
  }

  // ---- checkpoints ---------------------------------------------------------------------

  // Keeps the WAL short without making the writer wait for a checkpoint's fsyncs: the
  // checkpointer thread copies pages back on its own connection while the writer goes on.
  void after_commit() {
    const int frames = db_->wal_frames();
    if (frames < frames_at_checkpoint_) frames_at_checkpoint_ = 0;  // the WAL restarted
    if (frames - frames_at_checkpoint_ < kCheckpointEvery) return;
    frames_at_checkpoint_ = frames;
    if (frames >= kWalFallbackFrames) return db_->checkpoint();
    {
      std::lock_guard lock(checkpoint_mu_);
      checkpoint_wanted_ = true;
    }
    checkpoint_cv_.notify_one();
  }

  void run_checkpointer() {
    std::unique_lock lock(checkpoint_mu_);
    for (;;) {
      checkpoint_cv_.wait(lock, [&] { return checkpoint_wanted_ || checkpoint_stop_; });
      if (checkpoint_stop_) return;
      checkpoint_wanted_ = false;
      lock.unlock();
      db_->checkpoint_from_other_thread();  // failures only delay it; the writer bounds the WAL
      lock.lock();
    }
  }

  struct Sweeper {
    Callback<std::uint64_t> cb;
    std::uint64_t records = 0;
  };

  // Fixed at construction.
  const std::unique_ptr<Database> db_;
  const std::shared_ptr<const Clock> clock_;
  const Duration op_timeout_;
  const Duration sweep_interval_;
  const std::size_t max_result_bytes_;

  // Shared between callers and the writer.
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Queued> queue_;  // guarded by mu_
  bool idle_ = false;          // guarded by mu_: the writer waits on cv_
  bool stopping_ = false;      // guarded by mu_

  // The connection: the writer holds conn_mu_ from BEGIN to COMMIT, foreign_writes() for
  // one PRAGMA data_version between transactions.
  mutable std::mutex conn_mu_;
  mutable bool others_wrote_ = false;              // guarded by conn_mu_: their high-water mark to adopt
  mutable std::atomic<std::uint64_t> foreign_{0};  // commits of others seen (written under conn_mu_)
  // The WAL index stamp read just before foreign_writes() last asked data_version (0: none;
  // written under conn_mu_, after foreign_).
  mutable std::atomic<std::uint64_t> looked_at_{0};
  std::atomic<bool> write_locked_{false};  // the writer holds the write lock and has looked

  // The writer thread's alone.
  std::vector<Queued> batch_;
  core::FenceSource fences_;
  Fence persisted_high_water_;
  std::optional<SteadyClock::time_point> others_seen_;  // when another connection's commit was last seen
  // Scratch slots for the entry an operation works on, reused so that strings keep their
  // storage, and where its row is.
  std::optional<Record> record_;
  std::int64_t record_rowid_ = 0;
  std::optional<core::TokenEntry> token_;
  bool token_exists_ = false;
  std::optional<core::LockEntry> lock_;
  bool lock_exists_ = false;
  std::vector<Sweeper> sweepers_;
  bool sweep_periodic_ = false;
  SteadyClock::time_point next_sweep_;
  SteadyClock::time_point last_sweep_step_{};
  int frames_at_checkpoint_ = 0;

  // The checkpointer's wake-ups.
  std::mutex checkpoint_mu_;
  std::condition_variable checkpoint_cv_;
  bool checkpoint_wanted_ = false;  // guarded by checkpoint_mu_
  bool checkpoint_stop_ = false;    // guarded by checkpoint_mu_

  // Last: they start after everything above exists.
  std::thread checkpointer_;
  std::thread writer_;
};

struct Spec {
  std::string path;
  Sync sync = Sync::normal;
};

// PATH[?sync=normal|full]
Result<Spec> parse_spec(std::string_view spec) {
  const auto question = spec.find('?');
  Spec out{std::string(spec.substr(0, question))};
  if (out.path.empty()) return invalid_argument("sqlite: the store URI needs a path, as in sqlite:./idem.db");
  if (question == std::string_view::npos) return out;
  const std::string uri = "sqlite:" + std::string(spec);
  bool seen_sync = false;
  std::string_view query = spec.substr(question + 1);
  while (!query.empty()) {
    const util::QueryParam param = util::next_query_param(query);
    if (param.name != "sync" || !param.has_value) {
      return invalid_argument("sqlite: unknown parameter '" + std::string(param.text) + "' in '" + uri +
                              "' (the one parameter is sync=normal|full)");
    }
    if (seen_sync) return invalid_argument("sqlite: sync given twice in '" + uri + "'");
    seen_sync = true;
    const std::string_view value = param.value;
    if (value == "normal") {
      out.sync = Sync::normal;
    } else if (value == "full") {
      out.sync = Sync::full;
    } else {
      return invalid_argument("sqlite: sync must be normal or full, not '" + std::string(value) + "', in '" +
                              uri + "'");
    }
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<Store>> open(std::string_view spec, const StoreOptions& options) {
  auto parsed = parse_spec(spec);
  if (!parsed) return parsed.status();
  if (options.op_timeout.count() <= 0) return invalid_argument("sqlite: op_timeout must be greater than 0");
  if (options.sweep_interval.count() < 0) {
    return invalid_argument("sqlite: sweep_interval must not be negative");
  }

  auto db = Database::open(parsed->path, parsed->sync, options.op_timeout);
  if (!db) return db.status();
  auto high_water = (*db)->load_high_water();
  if (!high_water) return high_water.status();
  // From here on, commits of other connections (another process) show in data_version.
  if (auto seen = (*db)->changed_by_others(); !seen) return seen.status();

  auto clock = options.clock ? options.clock : std::make_shared<SystemClock>();
  return std::unique_ptr<Store>(
      std::make_unique<SqliteStore>(std::move(*db), *high_water, std::move(clock), options));
}

}  // namespace idem::sqlite
