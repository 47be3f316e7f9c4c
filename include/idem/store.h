// The store: the one interface behind which every backend (memory, SQLite, Redis, Redis
// Cluster, PostgreSQL, MySQL) implements the engine of docs/design.md with identical semantics.
//
// Every operation exists in two forms:
//   store.begin(args, callback)  asynchronous: returns at once; the callback runs exactly
//                                once, on a thread of the store's choosing (possibly the
//                                caller's, before begin returns). It must not block.
//   store.begin(args)            blocking: waits for the answer and returns it.
// Asio coroutines use idem/async.h, which wraps the asynchronous form and resumes the
// coroutine on its own executor, so no event loop ever blocks on a store.
//
// Errors: outcomes such as `fenced` or `busy` are values; a Status (status.h) means the
// store could not answer: `unavailable` (nothing happened, retry), `deadline_exceeded`
// (outcome unknown), `invalid_argument` (a zero lease, an empty key), `internal`.
// Arguments are checked here, once, before any backend sees them: an invalid call is
// answered invalid_argument at once (on the caller's thread) and never reaches do_*.
// Every backend bounds each call by its own deadline, so every callback does run.
//
// Thread safety: all Store implementations are safe for concurrent use from any number of
// threads. A Store must outlive the completion of every call made on it; its destructor
// waits for calls in flight.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "idem/clock.h"
#include "idem/detail/unique_function.h"
#include "idem/limits.h"
#include "idem/listing.h"
#include "idem/operations.h"
#include "idem/record.h"
#include "idem/status.h"

namespace idem {

template <class T>
using Callback = detail::UniqueFunction<void(Result<T>)>;

// What a backend offers, as data: callers never branch on the backend's name.
struct StoreTraits {
  const char* name = "";            // "memory", "sqlite", ...
  bool native_expiry = false;       // expired records vanish without sweep()
  bool durable = false;             // a committed result survives a crash of the process
  bool controllable_clock = false;  // uses the Clock given at open (tests may inject one)
  bool ordered_list = false;        // list() pages newest first by a keyset cursor
};

class Store {
 public:
  virtual ~Store() = default;
  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  virtual const StoreTraits& traits() const noexcept = 0;

  // ---- sizes -----------------------------------------------------------------------
  // Every store holds keys, scopes and lock names up to the lengths of limits.h. The
  // largest CommitArgs::result this store can hold, in bytes: commit answers
  // invalid_argument at once for a larger one, before the backend sees it. Read once when
  // the store opens (MySQL: the server's max_allowed_packet, less the hex encoding of the
  // statement; Redis: proto-max-bulk-len; docs/stores.md, "Sizes") and fixed after.
  // Cheap and thread-safe.
  virtual std::uint64_t max_result_bytes() const noexcept = 0;

  // ---- records ---------------------------------------------------------------------
  // begin: no live record → acquire; pending with an expired lease → take over (recovered,
  // naming the fence taken over: previous_fence); a differing non-empty fingerprint →
  // mismatch (checked first); done → replay; pending with a live lease → in_progress.
  void begin(BeginArgs a, Callback<BeginOutcome> cb);
  // commit: pending with this fence → done, expires_at = now + retention; done with this
  // fence → committed, unchanged (a retry); with a non-empty over_uncertain, also a live done
  // record whose result starts with those bytes → replaced (result, this fence, expires_at);
  // else fenced. invalid_argument: a result larger than max_result_bytes(), an
  // over_uncertain with a fence no store hands out (0, above kMaxFence).
  void commit(CommitArgs a, Callback<CommitOutcome> cb);
  // release: pending with this fence → removed; a retry acquires with a greater fence.
  void release(ReleaseArgs a, Callback<ReleaseOutcome> cb);
  // abandon: pending (lease live or not) and claimed by this non-empty owner → removed, as
  // by release (the next acquisition gets a greater fence); otherwise fenced, nothing changes.
  void abandon(AbandonArgs a, Callback<ReleaseOutcome> cb);
  // extend: pending with this fence → lease_until = now + lease (expires_at moves along).
  void extend(ExtendArgs a, Callback<ExtendOutcome> cb);
  // get: the live record, or nullopt when absent or expired.
  void get(RecordId id, Callback<std::optional<Record>> cb);
  // remove: operator purge; true when a live record was removed.
  void remove(RecordId id, Callback<bool> cb);
  // sweep: delete expired records, tokens and locks; returns how many records went.
  void sweep(Callback<std::uint64_t> cb) { do_sweep(std::move(cb)); }
  // list: one page of live records matching the filters (listing.h). SQLite, PostgreSQL, MySQL
  // and memory order newest first (latest expires_at, then scope and key) and page by a keyset
  // cursor, so records written while an operator pages never shift a page; Redis pages in
  // SCAN order (unordered; a record changed or written while paging may be missed or shown
  // twice). A page may hold fewer than `limit` records while more follow: only an empty
  // next_cursor ends the listing. Each call does bounded work. invalid_argument: a limit
  // outside 1..kMaxListLimit, a cursor this store did not hand out.
  void list(ListArgs a, Callback<ListPage> cb);

  // ---- one-time tokens --------------------------------------------------------------
  // issue_token: ≥128 random bits as URL-safe text, valid for ttl, bound to scope.
  void issue_token(IssueTokenArgs a, Callback<std::string> cb);
  // consume_token: of N concurrent consumers exactly one gets `consumed`; unknown, expired,
  // already consumed or another scope's token → invalid.
  void consume_token(TokenArgs a, Callback<ConsumeOutcome> cb);
  // restore_token: re-arm a token issued to this scope (consumed or not) for ttl;
  // a token never issued to the scope (or long forgotten) → invalid.
  void restore_token(RestoreTokenArgs a, Callback<RestoreOutcome> cb);

  // ---- locks ------------------------------------------------------------------------
  // lock: free or expired → locked with a new fence (greater than any fence handed out for
  // the name before); held by the same owner → locked again, same fence, ttl renewed;
  // held by another owner → busy.
  void lock(LockArgs a, Callback<LockOutcome> cb);
  // unlock / extend_lock: only the current, unexpired owner succeeds; others get not_owner.
  void unlock(UnlockArgs a, Callback<UnlockOutcome> cb);
  void extend_lock(LockArgs a, Callback<LockExtendOutcome> cb);

  // ---- health ----------------------------------------------------------------------------
  // ping: ok when the store answers (for /readyz).
  void ping(Callback<Done> cb) { do_ping(std::move(cb)); }

  // ---- change detection, for caches in front of the store ---------------------------------
  // A number that changes whenever a writer other than this Store object may have changed or
  // removed records since the last call (another process on the same SQLite file: `idem
  // record delete`, say); two equal answers mean nobody else wrote in between. This object's
  // own writes never change it. nullopt when the store cannot tell (a server shared by many
  // clients: Redis, PostgreSQL, MySQL). Cheap and thread-safe: a replay cache asks it per hit.
  virtual std::optional<std::uint64_t> foreign_writes() const noexcept { return std::nullopt; }

  // ---- blocking forms: the same operations, waiting for the answer ----------------------
  Result<BeginOutcome> begin(BeginArgs a);
  Result<CommitOutcome> commit(CommitArgs a);
  Result<ReleaseOutcome> release(ReleaseArgs a);
  Result<ReleaseOutcome> abandon(AbandonArgs a);
  Result<ExtendOutcome> extend(ExtendArgs a);
  Result<std::optional<Record>> get(RecordId id);
  Result<bool> remove(RecordId id);
  Result<std::uint64_t> sweep();
  Result<ListPage> list(ListArgs a);
  Result<std::string> issue_token(IssueTokenArgs a);
  Result<ConsumeOutcome> consume_token(TokenArgs a);
  Result<RestoreOutcome> restore_token(RestoreTokenArgs a);
  Result<LockOutcome> lock(LockArgs a);
  Result<UnlockOutcome> unlock(UnlockArgs a);
  Result<LockExtendOutcome> extend_lock(LockArgs a);
  Result<Done> ping();

 protected:
  virtual void do_begin(BeginArgs, Callback<BeginOutcome>) = 0;
  virtual void do_commit(CommitArgs, Callback<CommitOutcome>) = 0;
  virtual void do_release(ReleaseArgs, Callback<ReleaseOutcome>) = 0;
  virtual void do_abandon(AbandonArgs, Callback<ReleaseOutcome>) = 0;
  virtual void do_extend(ExtendArgs, Callback<ExtendOutcome>) = 0;
  virtual void do_get(RecordId, Callback<std::optional<Record>>) = 0;
  virtual void do_remove(RecordId, Callback<bool>) = 0;
  virtual void do_sweep(Callback<std::uint64_t>) = 0;
  virtual void do_list(ListArgs, Callback<ListPage>) = 0;
  virtual void do_issue_token(IssueTokenArgs, Callback<std::string>) = 0;
  virtual void do_consume_token(TokenArgs, Callback<ConsumeOutcome>) = 0;
  virtual void do_restore_token(RestoreTokenArgs, Callback<RestoreOutcome>) = 0;
  virtual void do_lock(LockArgs, Callback<LockOutcome>) = 0;
  virtual void do_unlock(UnlockArgs, Callback<UnlockOutcome>) = 0;
  virtual void do_extend_lock(LockArgs, Callback<LockExtendOutcome>) = 0;
  virtual void do_ping(Callback<Done>) = 0;
};

}  // namespace idem
