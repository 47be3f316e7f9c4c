// The arguments and outcomes of every engine operation (docs/design.md).
// Outcomes are values, not errors: `fenced`, `mismatch`, `busy` are normal answers. A
// Status (status.h) is reserved for "the store could not answer".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "idem/clock.h"
#include "idem/record.h"

namespace idem {

// ---- records ------------------------------------------------------------------------

struct BeginArgs {
  std::string scope;
  std::string key;
  std::string fingerprint;  // empty: matches anything, never mismatches
  Duration lease{};         // > 0
  Duration retention{};     // > 0; a pending record expires at lease_until + retention
  // Who claims: stored with the pending record (a takeover replaces it) so that the same
  // owner can abandon a claim it never used, e.g. after this begin's answer was lost.
  // Empty: no owner; such a claim cannot be abandoned.
  std::string owner{};
};

struct BeginOutcome {
  enum class Kind {
    acquired,     // the caller holds the key: run the side effect, then commit or release
    replay,       // done with a matching fingerprint: `result` is the first result
    in_progress,  // another holder's lease is live: retry after `retry_after`
    mismatch,     // the record's fingerprint differs (checked first); nothing changed
  };
  Kind kind = Kind::mismatch;
  Fence fence = 0;         // acquired: the caller's fence; replay: the committing fence
  bool recovered = false;  // acquired: took over an expired lease; previous outcome unknown
  std::string result;      // replay
  Duration retry_after{};  // in_progress: until the holder's lease ends (at least 1 µs)
  // replay: how long the record still lives, measured by the store's clock when it
  // answered (> 0). A caller that keeps the result counts it from a moment before it sent
  // the begin, so it never keeps it past the record's expiry, whatever the clocks' skew.
  Duration expires_in{};
  // acquired with recovered: the fence of the claim taken over, the one its silent holder's
  // work carried (an uncertain record names it, so that an operator asks the service about
  // the right attempt); 0 otherwise.
  Fence previous_fence = 0;

  static BeginOutcome acquired(Fence f, bool recovered, Fence previous = 0) {
    return {Kind::acquired, f, recovered, {}, {}, {}, recovered ? previous : 0};
  }
  static BeginOutcome replay(Fence f, std::string r, Duration expires_in) {
    return {Kind::replay, f, false, std::move(r), {}, expires_in, 0};
  }
  static BeginOutcome in_progress(Duration d) { return {Kind::in_progress, 0, false, {}, d, {}, 0}; }
  static BeginOutcome mismatch() { return {Kind::mismatch, 0, false, {}, {}, {}, 0}; }
  friend bool operator==(const BeginOutcome&, const BeginOutcome&) = default;
};

struct CommitArgs {
  std::string scope;
  std::string key;
  Fence fence = 0;
  std::string result;
  Duration retention{};  // > 0; expires_at = commit time + retention
  // Not empty: the commit also succeeds on a live done record whose result starts with
  // these bytes, and replaces it (the record takes `result`, this fence and a new
  // expires_at). The claim runner passes the uncertain marker that a takeover of this very
  // claim would have written, so a late commit of a known result recovers the answer
  // (docs/gateway.md, "When the store fails"). Empty: only the pending record with this
  // fence (and a retry of a commit that landed).
  std::string over_uncertain{};
};
enum class CommitOutcome { committed, fenced };

// Re-arms a token of the release's scope in the same atomic step as the release, so that a
// duplicate waiting for the key never finds the key free and the token still consumed.
struct TokenRestore {
  std::string token;  // not empty
  Duration ttl{};     // > 0: as restore_token's
};

struct ReleaseArgs {
  std::string scope;
  std::string key;
  Fence fence = 0;
  // When set and the release succeeds, the token (scope, token) is restored as by
  // restore_token (an unknown or forgotten token stays so); when fenced, it is untouched.
  // On a Redis Cluster the token must share the record's slot: the key is the token or
  // ends in ':' and the token (docs/design.md); otherwise invalid_argument.
  std::optional<TokenRestore> restore_token{};
};
enum class ReleaseOutcome { released, fenced };

// abandon: give back a claim by its owner rather than its fence, for a caller that never
// learned the fence (its begin's answer was lost; docs/gateway.md, "When the store fails").
struct AbandonArgs {
  std::string scope;
  std::string key;
  std::string owner;  // not empty
};

struct ExtendArgs {
  std::string scope;
  std::string key;
  Fence fence = 0;
  Duration lease{};  // > 0; lease_until = now + lease, expires_at moves with it
};
enum class ExtendOutcome { extended, fenced };

struct RecordId {
  std::string scope;
  std::string key;
};

// ---- one-time tokens ------------------------------------------------------------------

struct IssueTokenArgs {
  std::string scope;
  Duration ttl{};  // > 0
};

struct TokenArgs {
  std::string scope;
  std::string token;
};
enum class ConsumeOutcome { consumed, invalid };

struct RestoreTokenArgs {
  std::string scope;
  std::string token;
  Duration ttl{};  // > 0: the restored token is valid for this long
};
enum class RestoreOutcome { restored, invalid };

// ---- locks ----------------------------------------------------------------------------

struct LockArgs {
  std::string name;
  std::string owner;
  Duration ttl{};  // > 0
};

struct LockOutcome {
  enum class Kind { locked, busy };
  Kind kind = Kind::busy;
  Fence fence = 0;         // locked
  Duration retry_after{};  // busy: until the current owner's lock expires
  static LockOutcome locked(Fence f) { return {Kind::locked, f, {}}; }
  static LockOutcome busy(Duration d) { return {Kind::busy, 0, d}; }
  friend bool operator==(const LockOutcome&, const LockOutcome&) = default;
};

struct UnlockArgs {
  std::string name;
  std::string owner;
};
enum class UnlockOutcome { released, not_owner };
enum class LockExtendOutcome { extended, not_owner };

// Names as the control API writes them (docs/admin.md): "acquired", "replay", "in_progress", "mismatch",
// "committed", ...
const char* to_string(BeginOutcome::Kind) noexcept;
const char* to_string(CommitOutcome) noexcept;
const char* to_string(ReleaseOutcome) noexcept;
const char* to_string(ExtendOutcome) noexcept;
const char* to_string(ConsumeOutcome) noexcept;
const char* to_string(RestoreOutcome) noexcept;
const char* to_string(LockOutcome::Kind) noexcept;
const char* to_string(UnlockOutcome) noexcept;
const char* to_string(LockExtendOutcome) noexcept;

}  // namespace idem
