// The replay cache (docs/gateway.md, "Replays from memory"): the results this gateway
// committed or the store replayed to it, kept in memory so that a repeat is answered
// without a store round trip.
// A done record's result never changes; it only goes away, when it expires or an operator
// removes it. So an entry is served only while all of these hold:
//   - the record has not expired: an entry lives at most the route's retention from a
//     moment before its commit (the store's expiry is measured from the commit itself),
//     or what the store said the record still lives from a moment before the begin that
//     replayed it. That life is counted on the monotonic clock (steady_clock), so no step
//     of the wall clock can stretch it; the store's clock (`clock`) can only shorten it
//     (for memory and SQLite it is the clock the record expires by, so a step forward
//     ends the entry with the record);
//   - it was not removed through this gateway (the admin API's DELETE erases it);
//   - nobody else may have written the store since: stores that can tell (memory, SQLite:
//     Store::foreign_writes()) empty the cache when another process writes the file, so
//     they are exact; on shared stores (Redis, PostgreSQL, MySQL) another instance's removal is
//     not seen, so an entry lives at most `shared_ttl` there, and a removal elsewhere may
//     go unseen that long (a repeat is replayed rather than run again: the safe side).
// Bounded in bytes (least recently used entries go first). A put races with a removal
// safely: an entry whose commit began before a removal is refused, and one whose commit
// began before a foreign write is never served.
// Safe for concurrent use.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "idem/clock.h"
#include "idem/store.h"

namespace idem::gateway {

class ReplayCache {
 public:
  struct Options {
    std::size_t max_bytes = 16u << 20;  // 0: no cache
    Duration shared_ttl = std::chrono::seconds(1);
  };

  // `store` must outlive the cache; `clock` is the one the store measures expiry by (the
  // system clock when null). Entries' lives are counted on steady_clock besides.
  ReplayCache(const Store& store, Options options, std::shared_ptr<const Clock> clock = nullptr);

  bool enabled() const noexcept { return max_bytes_ > 0; }

  // Taken just before a commit is sent: put() refuses an entry whose ticket is older than
  // the last removal, and get() one whose ticket is older than a foreign write.
  struct Ticket {
    std::uint64_t generation = 0;
    std::optional<std::uint64_t> foreign;
    TimePoint taken{};                               // by `clock`
    std::chrono::steady_clock::time_point steady{};  // the same moment, monotonic
  };
  Ticket ticket() const;

  // Keeps the result of (scope, key) with `fingerprint`, committed (or replayed by the
  // store) under `ticket`, for at most `lives` from the ticket: the route's retention for
  // a commit, what the record still lives for a replay. Nothing when `lives` is not > 0.
  void put(const Ticket& ticket, std::string_view scope, std::string_view key, std::string_view fingerprint,
           std::shared_ptr<const std::string> stored, Duration lives);

  // The stored result of (scope, key) when cached, unexpired and committed with this
  // fingerprint (a differing one is for the store to answer), else null.
  std::shared_ptr<const std::string> get(std::string_view scope, std::string_view key,
                                         std::string_view fingerprint);

  // The record was removed (or may have been): never serve it again.
  void erase(std::string_view scope, std::string_view key);
  void clear();

  std::size_t bytes() const noexcept { return bytes_.load(std::memory_order_relaxed); }
  std::uint64_t hits() const noexcept { return hits_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    std::string id;
    std::string fingerprint;
    std::shared_ptr<const std::string> stored;
    TimePoint expires_at;                               // by `clock`: may only shorten its life
    std::chrono::steady_clock::time_point ends;         // its life from the ticket, monotonic
    std::chrono::steady_clock::time_point fresh_until;  // shared stores: shared_ttl after put
    std::uint64_t foreign;  // the store's foreign writes at its ticket (kUnknown: cannot tell)
    std::size_t size;
  };
  struct Shard {
    std::mutex mu;
    std::list<Entry> lru;  // most recently used first
    std::unordered_map<std::string_view, std::list<Entry>::iterator> index;
    std::size_t bytes = 0;
  };
  static constexpr std::size_t kShards = 16;

  Shard& shard_of(std::string_view id);
  void drop(Shard& s, std::list<Entry>::iterator it);  // requires s.mu
  // False (and the cache emptied) when `now`, the store's foreign_writes(), differs from
  // what the cache last saw.
  bool still_exact(std::optional<std::uint64_t> now);
  static constexpr std::uint64_t kUnknown = ~std::uint64_t{0};  // the store cannot tell

  const Store& store_;
  const std::size_t max_bytes_;
  const Duration shared_ttl_;
  std::shared_ptr<const Clock> clock_;
  std::atomic<std::uint64_t> generation_{0};  // bumped by every erase and clear
  std::atomic<std::uint64_t> foreign_seen_{kUnknown};
  std::atomic<std::size_t> bytes_{0};
  std::atomic<std::uint64_t> hits_{0};
  std::vector<Shard> shards_;
};

}  // namespace idem::gateway
