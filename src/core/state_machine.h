// The engine's decisions, written once for every backend that holds its state in-process
// or reads it into the process (memory, SQLite). Each `apply_*` takes the current stored
// entry (nullopt when none; possibly expired), the request and the store's clock reading,
// and changes the entry in place exactly as docs/design.md describes. The caller persists the
// entry when the returned Effect says so. No I/O, no locking: the caller makes the
// read-apply-write atomic (a shard mutex, a transaction).
#pragma once

#include <optional>
#include <string>

#include "idem/clock.h"
#include "idem/operations.h"
#include "idem/record.h"
#include "idem/status.h"

namespace idem::core {

// What the caller must do with the entry after an apply_*.
enum class Effect { none, write, erase };

// Hands out fences: max(previous + 1, clock in µs, high-water + 1). One FenceSource must
// serve every acquisition of a given key (a shard, a database), so that two acquisitions
// within one microsecond still differ.
class FenceSource {
 public:
  explicit FenceSource(Fence high_water = 0) : high_water_(high_water) {}
  Fence next(Fence previous, TimePoint now) noexcept;
  Fence high_water() const noexcept { return high_water_; }
  void raise(Fence f) noexcept { high_water_ = f > high_water_ ? f : high_water_; }

 private:
  Fence high_water_;
};

// True when the entry is past its expires_at at `now` (docs/design.md I6: treated as absent).
inline bool expired(const Record& r, TimePoint now) noexcept { return now >= r.expires_at; }

// Validation shared by every backend: invalid_argument for an empty key, a non-positive
// lease/retention/ttl. Returns ok otherwise.
Status validate(const BeginArgs&);
Status validate(const CommitArgs&);
Status validate(const ReleaseArgs&);
Status validate(const AbandonArgs&);
Status validate(const ExtendArgs&);
Status validate(const RecordId&);
Status validate(const IssueTokenArgs&);
Status validate(const TokenArgs&);
Status validate(const RestoreTokenArgs&);
Status validate(const LockArgs&);
Status validate(const UnlockArgs&);

// ---- records ---------------------------------------------------------------------------

struct BeginDecision {
  BeginOutcome outcome;
  Effect effect = Effect::none;
};
// `slot` holds the stored record for (args.scope, args.key), if any.
BeginDecision apply_begin(std::optional<Record>& slot, const BeginArgs& args, TimePoint now,
                          FenceSource& fences);

// Moves args.result into the record on success: a live pending record with args.fence, or a
// live done record whose result starts with a non-empty args.over_uncertain (it takes
// args.fence). A live done record with args.fence is a retried commit: committed, unchanged.
Effect apply_commit(std::optional<Record>& slot, CommitArgs&& args, TimePoint now, CommitOutcome& out);
Effect apply_release(std::optional<Record>& slot, const ReleaseArgs& args, TimePoint now,
                     ReleaseOutcome& out);
// abandon: erase a live pending record whose owner is args.owner (never empty).
Effect apply_abandon(std::optional<Record>& slot, const AbandonArgs& args, TimePoint now,
                     ReleaseOutcome& out);
Effect apply_extend(std::optional<Record>& slot, const ExtendArgs& args, TimePoint now, ExtendOutcome& out);
// remove: erase when live; `removed` tells whether a live record went.
Effect apply_remove(std::optional<Record>& slot, TimePoint now, bool& removed);

// ---- tokens ----------------------------------------------------------------------------

struct TokenEntry {
  bool consumed = false;
  Duration ttl{};          // as issued; a consumed token stays restorable this long
  TimePoint expires_at{};  // armed: valid until; consumed: forgotten after
  friend bool operator==(const TokenEntry&, const TokenEntry&) = default;
};

// A fresh armed entry for issue_token.
TokenEntry issue_token_entry(const IssueTokenArgs& args, TimePoint now);
Effect apply_consume(std::optional<TokenEntry>& slot, TimePoint now, ConsumeOutcome& out);
Effect apply_restore(std::optional<TokenEntry>& slot, const RestoreTokenArgs& args, TimePoint now,
                     RestoreOutcome& out);
// The second half of a release with args.restore_token set, after it released: `slot`
// holds the token (args.scope, args.restore_token->token).
Effect apply_restore_after_release(std::optional<TokenEntry>& slot, const ReleaseArgs& args, TimePoint now);
inline bool expired(const TokenEntry& t, TimePoint now) noexcept { return now >= t.expires_at; }

// ---- locks -----------------------------------------------------------------------------

struct LockEntry {
  std::string owner;
  Fence fence = 0;
  TimePoint expires_at{};
  friend bool operator==(const LockEntry&, const LockEntry&) = default;
};

// An expired lock entry is kept by callers that can (its fence is the `previous` of the
// next acquisition); it is never treated as held.
Effect apply_lock(std::optional<LockEntry>& slot, const LockArgs& args, TimePoint now, FenceSource& fences,
                  LockOutcome& out);
Effect apply_unlock(std::optional<LockEntry>& slot, const UnlockArgs& args, TimePoint now,
                    UnlockOutcome& out);
Effect apply_extend_lock(std::optional<LockEntry>& slot, const LockArgs& args, TimePoint now,
                         LockExtendOutcome& out);
inline bool expired(const LockEntry& l, TimePoint now) noexcept { return now >= l.expires_at; }

// ---- tokens' text ----------------------------------------------------------------------

// 24 bytes (192 bits) from the OS CSPRNG, base64url without padding: 32 characters.
// unavailable when the CSPRNG fails.
Result<std::string> random_token();

}  // namespace idem::core
