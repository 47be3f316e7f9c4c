// The memory store: 64 shards, each a mutex over flat hash maps. Every operation hashes its
// key once (the hash picks the shard and the slot), locks exactly one shard, applies the
// shared state machine (core/state_machine.h) on the stored entry in place and answers
// inline after unlocking. A lookup allocates nothing; only a new entry stores its key.
// Expired entries are dropped lazily: a shard sweeps itself whenever it has doubled since
// its last sweep, so memory stays bounded without a sweeper thread.
#include "stores/memory/memory_store.h"

#include <xxhash.h>

#include <algorithm>
#include <array>
#include <boost/unordered/unordered_flat_map.hpp>
#include <cstring>
#include <mutex>
#include <vector>

#include "core/listing.h"
#include "core/state_machine.h"

namespace idem::memory {
namespace {

using core::Effect;

// An entry's address: scope and key (a lock has only a name, in `key`), hashed once.
struct IdView {
  std::string_view scope;
  std::string_view key;
  std::uint64_t hash;

  IdView(std::string_view s, std::string_view k)
      : scope(s), key(k), hash(XXH3_64bits_withSeed(k.data(), k.size(), XXH3_64bits(s.data(), s.size()))) {}
};

// The stored form: scope and key joined without ambiguity (a scope may hold any byte) as
// the scope's length in four raw bytes, the scope, the key; and the hash, kept so that
// growing the map never hashes again.
struct Id {
  std::string bytes;
  std::uint64_t hash;

  explicit Id(const IdView& v) : hash(v.hash) {
    const auto n = static_cast<std::uint32_t>(v.scope.size());
    bytes.reserve(sizeof n + v.scope.size() + v.key.size());
    bytes.append(reinterpret_cast<const char*>(&n), sizeof n).append(v.scope).append(v.key);
  }
};

struct IdHash {
  using is_transparent = void;
  using is_avalanching = void;  // XXH3 mixes well: the map uses the bits as they are
  std::size_t operator()(const Id& id) const noexcept { return id.hash; }
  std::size_t operator()(const IdView& v) const noexcept { return v.hash; }
};

struct IdEqual {
  using is_transparent = void;
  bool operator()(const Id& a, const Id& b) const noexcept { return a.bytes == b.bytes; }
  bool operator()(const Id& a, const IdView& v) const noexcept { return same(a, v); }
  bool operator()(const IdView& v, const Id& a) const noexcept { return same(a, v); }
  static bool same(const Id& a, const IdView& v) noexcept {
    std::uint32_t n = 0;
    const std::string_view b = a.bytes;
    if (a.hash != v.hash || b.size() != sizeof n + v.scope.size() + v.key.size()) return false;
    std::memcpy(&n, b.data(), sizeof n);
    return n == v.scope.size() && b.substr(sizeof n, n) == v.scope && b.substr(sizeof n + n) == v.key;
  }
};

// A map whose entries are optionals, so the state machine can work on the stored value in
// place: an empty optional left behind by an operation is erased, and one filled for an
// absent id is inserted.
template <class Entry>
class Table {
 public:
  template <class Fn>
  auto with(const IdView& id, Fn&& fn) {
    auto it = map_.find(id);
    if (it != map_.end()) {
      if constexpr (std::is_void_v<decltype(fn(it->second))>) {
        fn(it->second);
        if (!it->second) map_.erase(it);
      } else {
        auto out = fn(it->second);
        if (!it->second) map_.erase(it);
        return out;
      }
    } else {
      std::optional<Entry> fresh;
      if constexpr (std::is_void_v<decltype(fn(fresh))>) {
        fn(fresh);
        if (fresh) map_.emplace(Id(id), std::move(fresh));
      } else {
        auto out = fn(fresh);
        if (fresh) map_.emplace(Id(id), std::move(fresh));
        return out;
      }
    }
  }

  template <class Fn>
  void for_each(Fn&& fn) const {
    for (const auto& [id, entry] : map_)
      if (entry) fn(*entry);
  }

  // Removes entries expired at `now`; returns how many.
  std::uint64_t sweep(TimePoint now) {
    const std::size_t before = map_.size();
    boost::unordered::erase_if(map_,
                               [&](const auto& kv) { return !kv.second || core::expired(*kv.second, now); });
    next_sweep_ = std::max<std::size_t>(kMinSweepSize, 2 * map_.size());
    return before - map_.size();
  }

  void maybe_sweep(TimePoint now) {
    if (map_.size() >= next_sweep_) sweep(now);
  }

 private:
  static constexpr std::size_t kMinSweepSize = 1024;
  boost::unordered_flat_map<Id, std::optional<Entry>, IdHash, IdEqual> map_;
  std::size_t next_sweep_ = kMinSweepSize;
};

struct Shard {
  std::mutex mu;
  Table<Record> records;
  Table<core::TokenEntry> tokens;
  Table<core::LockEntry> locks;
  core::FenceSource fences;
};

class MemoryStore final : public Store {
 public:
  explicit MemoryStore(std::shared_ptr<const Clock> clock) : clock_(std::move(clock)) {}

  const StoreTraits& traits() const noexcept override {
    static constexpr StoreTraits kTraits{"memory", /*native_expiry=*/true, /*durable=*/false,
                                         /*controllable_clock=*/true, /*ordered_list=*/true};
    return kTraits;
  }
  // Nothing but this object can reach its records.
  std::optional<std::uint64_t> foreign_writes() const noexcept override { return 0; }
  // No server to bound it: 1 GiB, the largest max_result a gateway config allows, and 1 MiB
  // for the response's headers.
  std::uint64_t max_result_bytes() const noexcept override { return (1ull << 30) + (1ull << 20); }

 private:
  static constexpr std::size_t kShards = 64;

  // Bits of the hash that the maps' slot positions (its top bits) and tag (its low byte)
  // leave alone, so entries of one shard still spread over all of its slots.
  Shard& shard(const IdView& id) { return shards_[(id.hash >> 32) % kShards]; }

  // Runs fn(shard, now) under the shard's mutex and returns its value; the caller answers
  // after the lock is gone, so a callback may call the store again.
  template <class Fn>
  auto locked(const IdView& id, Fn&& fn) {
    Shard& sh = shard(id);
    std::lock_guard lock(sh.mu);
    return fn(sh, clock_->now());
  }

  // The same for an operation on two entries: fn(shard of a, shard of b, now) under both
  // shards' mutexes (one when they are the same shard).
  template <class Fn>
  auto locked(const IdView& a, const IdView& b, Fn&& fn) {
    Shard& x = shard(a);
    Shard& y = shard(b);
    if (&x == &y) {
      std::lock_guard lock(x.mu);
      return fn(x, y, clock_->now());
    }
    std::scoped_lock lock(x.mu, y.mu);
    return fn(x, y, clock_->now());
  }

 protected:
  void do_begin(BeginArgs a, Callback<BeginOutcome> cb) override {
    const IdView id(a.scope, a.key);
    cb(locked(id, [&](Shard& sh, TimePoint now) {
      auto d = sh.records.with(id, [&](auto& slot) { return core::apply_begin(slot, a, now, sh.fences); });
      sh.records.maybe_sweep(now);
      return std::move(d.outcome);
    }));
  }

  void do_commit(CommitArgs a, Callback<CommitOutcome> cb) override {
    const IdView id(a.scope, a.key);
    cb(locked(id, [&](Shard& sh, TimePoint now) {
      CommitOutcome out{};
      sh.records.with(id, [&](auto& slot) { core::apply_commit(slot, std::move(a), now, out); });
      return out;
    }));
  }

  void do_release(ReleaseArgs a, Callback<ReleaseOutcome> cb) override {
    const IdView id(a.scope, a.key);
    if (!a.restore_token) {
      return cb(locked(id, [&](Shard& sh, TimePoint now) {
        ReleaseOutcome out{};
        sh.records.with(id, [&](auto& slot) { core::apply_release(slot, a, now, out); });
        return out;
      }));
    }
    const IdView token_id(a.scope, a.restore_token->token);
    cb(locked(id, token_id, [&](Shard& records, Shard& tokens, TimePoint now) {
      ReleaseOutcome out{};
      records.records.with(id, [&](auto& slot) { core::apply_release(slot, a, now, out); });
      if (out == ReleaseOutcome::released) {
        tokens.tokens.with(token_id, [&](auto& slot) { core::apply_restore_after_release(slot, a, now); });
      }
      return out;
    }));
  }

  void do_abandon(AbandonArgs a, Callback<ReleaseOutcome> cb) override {
    const IdView id(a.scope, a.key);
    cb(locked(id, [&](Shard& sh, TimePoint now) {
      ReleaseOutcome out{};
      sh.records.with(id, [&](auto& slot) { core::apply_abandon(slot, a, now, out); });
      return out;
    }));
  }

  void do_extend(ExtendArgs a, Callback<ExtendOutcome> cb) override {
    const IdView id(a.scope, a.key);
    cb(locked(id, [&](Shard& sh, TimePoint now) {
      ExtendOutcome out{};
      sh.records.with(id, [&](auto& slot) { core::apply_extend(slot, a, now, out); });
      return out;
    }));
  }

  void do_get(RecordId a, Callback<std::optional<Record>> cb) override {
    const IdView id(a.scope, a.key);
    cb(locked(id, [&](Shard& sh, TimePoint now) {
      return sh.records.with(id, [&](auto& slot) -> std::optional<Record> {
        if (slot && !core::expired(*slot, now)) return slot;
        return std::nullopt;
      });
    }));
  }

  void do_remove(RecordId a, Callback<bool> cb) override {
    const IdView id(a.scope, a.key);
    cb(locked(id, [&](Shard& sh, TimePoint now) {
      bool removed = false;
      sh.records.with(id, [&](auto& slot) { core::apply_remove(slot, now, removed); });
      return removed;
    }));
  }

  void do_sweep(Callback<std::uint64_t> cb) override {
    std::uint64_t records = 0;
    for (auto& sh : shards_) {
      std::lock_guard lock(sh.mu);
      const TimePoint now = clock_->now();
      records += sh.records.sweep(now);
      sh.tokens.sweep(now);
      sh.locks.sweep(now);
    }
    cb(records);
  }

  // Every shard in turn (one lock at a time, so a listing never holds up the store for
  // long), keeping the first limit + 1 matching records in newest-first order.
  void do_list(ListArgs a, Callback<ListPage> cb) override {
    auto position = core::decode_position(a.cursor);
    if (!position) return cb(position.status());
    const std::size_t keep = a.limit + 1;
    std::vector<Record> rows;
    auto trim = [&] {
      std::sort(rows.begin(), rows.end(), core::shown_before);
      if (rows.size() > keep) rows.resize(keep);
    };
    for (auto& sh : shards_) {
      std::lock_guard lock(sh.mu);
      const TimePoint now = clock_->now();
      sh.records.for_each([&](const Record& r) {
        if (core::expired(r, now) || !core::matches(r, a) || (*position && !core::after(r, **position)))
          return;
        rows.push_back(r);
        if (rows.size() >= 2 * keep) trim();
      });
    }
    trim();
    cb(core::make_page(std::move(rows), a.limit));
  }

  void do_issue_token(IssueTokenArgs a, Callback<std::string> cb) override {
    auto token = core::random_token();
    if (!token) return cb(token.status());
    const IdView id(a.scope, *token);
    locked(id, [&](Shard& sh, TimePoint now) {
      sh.tokens.with(id, [&](auto& slot) { slot = core::issue_token_entry(a, now); });
      sh.tokens.maybe_sweep(now);
      return Done{};
    });
    cb(std::move(*token));
  }

  void do_consume_token(TokenArgs a, Callback<ConsumeOutcome> cb) override {
    const IdView id(a.scope, a.token);
    cb(locked(id, [&](Shard& sh, TimePoint now) {
      ConsumeOutcome out{};
      sh.tokens.with(id, [&](auto& slot) { core::apply_consume(slot, now, out); });
      return out;
    }));
  }

  void do_restore_token(RestoreTokenArgs a, Callback<RestoreOutcome> cb) override {
    const IdView id(a.scope, a.token);
    cb(locked(id, [&](Shard& sh, TimePoint now) {
      RestoreOutcome out{};
      sh.tokens.with(id, [&](auto& slot) { core::apply_restore(slot, a, now, out); });
      return out;
    }));
  }

  void do_lock(LockArgs a, Callback<LockOutcome> cb) override {
    const IdView id({}, a.name);
    cb(locked(id, [&](Shard& sh, TimePoint now) {
      LockOutcome out{};
      sh.locks.with(id, [&](auto& slot) { core::apply_lock(slot, a, now, sh.fences, out); });
      sh.locks.maybe_sweep(now);
      return out;
    }));
  }

  void do_unlock(UnlockArgs a, Callback<UnlockOutcome> cb) override {
    const IdView id({}, a.name);
    cb(locked(id, [&](Shard& sh, TimePoint now) {
      UnlockOutcome out{};
      sh.locks.with(id, [&](auto& slot) { core::apply_unlock(slot, a, now, out); });
      return out;
    }));
  }

  void do_extend_lock(LockArgs a, Callback<LockExtendOutcome> cb) override {
    const IdView id({}, a.name);
    cb(locked(id, [&](Shard& sh, TimePoint now) {
      LockExtendOutcome out{};
      sh.locks.with(id, [&](auto& slot) { core::apply_extend_lock(slot, a, now, out); });
      return out;
    }));
  }

  void do_ping(Callback<Done> cb) override { cb(Done{}); }

 private:
  std::shared_ptr<const Clock> clock_;
  std::array<Shard, kShards> shards_;
};

}  // namespace

std::unique_ptr<Store> open(const StoreOptions& options) {
  auto clock = options.clock ? options.clock : std::make_shared<SystemClock>();
  return std::make_unique<MemoryStore>(std::move(clock));
}

}  // namespace idem::memory
