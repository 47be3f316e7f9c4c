#include "core/state_machine.h"

#include <openssl/rand.h>

#include <algorithm>
#include <array>

namespace idem::core {

Fence FenceSource::next(Fence previous, TimePoint now) noexcept {
  const auto clock = static_cast<Fence>(std::max<std::int64_t>(to_micros(now), 0));
  const Fence f = std::max({previous + 1, clock, high_water_ + 1});
  high_water_ = f;
  return f;
}

namespace {

Status need(bool ok, const char* what) { return ok ? Status::ok() : invalid_argument(what); }

Status need_key(const std::string& key) { return need(!key.empty(), "key must not be empty"); }

// An empty fingerprint on either side matches (docs/design.md).
bool fingerprints_match(const std::string& stored, const std::string& given) {
  return stored.empty() || given.empty() || stored == given;
}

bool live_pending_with(const std::optional<Record>& slot, Fence fence, TimePoint now) {
  return slot && !expired(*slot, now) && slot->state == RecordState::pending && slot->fence == fence;
}

}  // namespace

Status validate(const BeginArgs& a) {
  if (auto s = need_key(a.key); !s) return s;
  if (auto s = need(a.lease.count() > 0, "lease must be greater than 0"); !s) return s;
  return need(a.retention.count() > 0, "retention must be greater than 0");
}
Status validate(const CommitArgs& a) {
  if (auto s = need_key(a.key); !s) return s;
  if (auto s = need(a.retention.count() > 0, "retention must be greater than 0"); !s) return s;
  // The record takes the fence: it must be one a store hands out.
  return need(a.over_uncertain.empty() || (a.fence > 0 && a.fence <= kMaxFence),
              "a commit over_uncertain needs a fence between 1 and 2^53 - 1");
}
Status validate(const ReleaseArgs& a) {
  if (auto s = need_key(a.key); !s) return s;
  if (!a.restore_token) return Status::ok();
  if (auto s = need(!a.restore_token->token.empty(), "token must not be empty"); !s) return s;
  return need(a.restore_token->ttl.count() > 0, "ttl must be greater than 0");
}
Status validate(const AbandonArgs& a) {
  if (auto s = need_key(a.key); !s) return s;
  return need(!a.owner.empty(), "owner must not be empty");
}
Status validate(const ExtendArgs& a) {
  if (auto s = need_key(a.key); !s) return s;
  return need(a.lease.count() > 0, "lease must be greater than 0");
}
Status validate(const RecordId& a) { return need_key(a.key); }
Status validate(const IssueTokenArgs& a) { return need(a.ttl.count() > 0, "ttl must be greater than 0"); }
Status validate(const TokenArgs& a) { return need(!a.token.empty(), "token must not be empty"); }
Status validate(const RestoreTokenArgs& a) {
  if (auto s = need(!a.token.empty(), "token must not be empty"); !s) return s;
  return need(a.ttl.count() > 0, "ttl must be greater than 0");
}
Status validate(const LockArgs& a) {
  if (auto s = need(!a.name.empty(), "lock name must not be empty"); !s) return s;
  if (auto s = need(!a.owner.empty(), "lock owner must not be empty"); !s) return s;
  return need(a.ttl.count() > 0, "ttl must be greater than 0");
}
Status validate(const UnlockArgs& a) {
  if (auto s = need(!a.name.empty(), "lock name must not be empty"); !s) return s;
  return need(!a.owner.empty(), "lock owner must not be empty");
}

BeginDecision apply_begin(std::optional<Record>& slot, const BeginArgs& args, TimePoint now,
                          FenceSource& fences) {
  const bool live = slot && !expired(*slot, now);
  if (live) {
    Record& r = *slot;
    if (!fingerprints_match(r.fingerprint, args.fingerprint)) return {BeginOutcome::mismatch()};
    if (r.state == RecordState::done) return {BeginOutcome::replay(r.fence, r.result, r.expires_at - now)};
    if (r.lease_until && now < *r.lease_until) return {BeginOutcome::in_progress(*r.lease_until - now)};
    // Pending with an expired lease: the holder's outcome is unknown; take over.
    const Fence previous = r.fence;
    r.fence = fences.next(r.fence, now);
    r.owner = args.owner;
    if (!args.fingerprint.empty()) r.fingerprint = args.fingerprint;
    r.lease_until = now + args.lease;
    r.expires_at = *r.lease_until + args.retention;
    return {BeginOutcome::acquired(r.fence, /*recovered=*/true, previous), Effect::write};
  }
  // Absent or expired (I6): a fresh acquisition. An expired entry still lends its fence,
  // so the new one is greater.
  const Fence previous = slot ? slot->fence : 0;
  Record r;
  r.scope = args.scope;
  r.key = args.key;
  r.state = RecordState::pending;
  r.fence = fences.next(previous, now);
  r.fingerprint = args.fingerprint;
  r.owner = args.owner;
  r.lease_until = now + args.lease;
  r.expires_at = *r.lease_until + args.retention;
  const Fence fence = r.fence;
  slot = std::move(r);
  return {BeginOutcome::acquired(fence, /*recovered=*/false), Effect::write};
}

Effect apply_commit(std::optional<Record>& slot, CommitArgs&& args, TimePoint now, CommitOutcome& out) {
  const bool live_done = slot && !expired(*slot, now) && slot->state == RecordState::done;
  if (live_done && slot->fence == args.fence) {
    // A retried commit (its first answer was lost): it took effect; the first result stays.
    out = CommitOutcome::committed;
    return Effect::none;
  }
  // Over an uncertain marker: a done record whose result begins with the given bytes.
  const bool over_uncertain =
      live_done && !args.over_uncertain.empty() && slot->result.starts_with(args.over_uncertain);
  if (!over_uncertain && !live_pending_with(slot, args.fence, now)) {
    out = CommitOutcome::fenced;
    return Effect::none;
  }
  Record& r = *slot;
  r.state = RecordState::done;
  r.fence = args.fence;
  r.lease_until.reset();
  r.expires_at = now + args.retention;
  r.result = std::move(args.result);
  out = CommitOutcome::committed;
  return Effect::write;
}

Effect apply_release(std::optional<Record>& slot, const ReleaseArgs& args, TimePoint now,
                     ReleaseOutcome& out) {
  if (!live_pending_with(slot, args.fence, now)) {
    out = ReleaseOutcome::fenced;
    return Effect::none;
  }
  slot.reset();
  out = ReleaseOutcome::released;
  return Effect::erase;
}

Effect apply_restore_after_release(std::optional<TokenEntry>& slot, const ReleaseArgs& args, TimePoint now) {
  RestoreOutcome ignored{};
  const RestoreTokenArgs restore{args.scope, args.restore_token->token, args.restore_token->ttl};
  return apply_restore(slot, restore, now, ignored);
}

Effect apply_abandon(std::optional<Record>& slot, const AbandonArgs& args, TimePoint now,
                     ReleaseOutcome& out) {
  if (!slot || expired(*slot, now) || slot->state != RecordState::pending || args.owner.empty() ||
      slot->owner != args.owner) {
    out = ReleaseOutcome::fenced;
    return Effect::none;
  }
  slot.reset();
  out = ReleaseOutcome::released;
  return Effect::erase;
}

Effect apply_extend(std::optional<Record>& slot, const ExtendArgs& args, TimePoint now, ExtendOutcome& out) {
  if (!live_pending_with(slot, args.fence, now)) {
    out = ExtendOutcome::fenced;
    return Effect::none;
  }
  Record& r = *slot;
  // A pending record expires `retention` after its lease; keep that distance.
  const Duration retention = r.lease_until ? r.expires_at - *r.lease_until : Duration{0};
  r.lease_until = now + args.lease;
  r.expires_at = *r.lease_until + retention;
  out = ExtendOutcome::extended;
  return Effect::write;
}

Effect apply_remove(std::optional<Record>& slot, TimePoint now, bool& removed) {
  removed = slot && !expired(*slot, now);
  if (!slot) return Effect::none;
  slot.reset();
  return Effect::erase;
}

TokenEntry issue_token_entry(const IssueTokenArgs& args, TimePoint now) {
  return TokenEntry{false, args.ttl, now + args.ttl};
}

Effect apply_consume(std::optional<TokenEntry>& slot, TimePoint now, ConsumeOutcome& out) {
  if (!slot || slot->consumed || expired(*slot, now)) {
    out = ConsumeOutcome::invalid;
    return Effect::none;
  }
  // Keep the consumed token for another ttl so that restore_token can re-arm it after a
  // failure that surfaced late.
  slot->consumed = true;
  slot->expires_at = std::max(slot->expires_at, now + slot->ttl);
  out = ConsumeOutcome::consumed;
  return Effect::write;
}

Effect apply_restore(std::optional<TokenEntry>& slot, const RestoreTokenArgs& args, TimePoint now,
                     RestoreOutcome& out) {
  if (!slot || expired(*slot, now)) {
    out = RestoreOutcome::invalid;
    return Effect::none;
  }
  slot->consumed = false;
  slot->expires_at = now + args.ttl;
  out = RestoreOutcome::restored;
  return Effect::write;
}

Effect apply_lock(std::optional<LockEntry>& slot, const LockArgs& args, TimePoint now, FenceSource& fences,
                  LockOutcome& out) {
  if (slot && !expired(*slot, now)) {
    if (slot->owner != args.owner) {
      out = LockOutcome::busy(slot->expires_at - now);
      return Effect::none;
    }
    // The owner asks again (a retry after a lost answer): same fence, ttl renewed.
    slot->expires_at = now + args.ttl;
    out = LockOutcome::locked(slot->fence);
    return Effect::write;
  }
  const Fence previous = slot ? slot->fence : 0;
  slot = LockEntry{args.owner, fences.next(previous, now), now + args.ttl};
  out = LockOutcome::locked(slot->fence);
  return Effect::write;
}

Effect apply_unlock(std::optional<LockEntry>& slot, const UnlockArgs& args, TimePoint now,
                    UnlockOutcome& out) {
  if (!slot || expired(*slot, now) || slot->owner != args.owner) {
    out = UnlockOutcome::not_owner;
    return Effect::none;
  }
  slot.reset();
  out = UnlockOutcome::released;
  return Effect::erase;
}

Effect apply_extend_lock(std::optional<LockEntry>& slot, const LockArgs& args, TimePoint now,
                         LockExtendOutcome& out) {
  if (!slot || expired(*slot, now) || slot->owner != args.owner) {
    out = LockExtendOutcome::not_owner;
    return Effect::none;
  }
  slot->expires_at = now + args.ttl;
  out = LockExtendOutcome::extended;
  return Effect::write;
}

Result<std::string> random_token() {
  std::array<unsigned char, 24> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    return unavailable("the system's random number generator failed");
  }
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  out.reserve(32);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const unsigned v = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  return out;
}

}  // namespace idem::core
