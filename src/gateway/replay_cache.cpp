#include "gateway/replay_cache.h"

#include <functional>

namespace idem::gateway {
namespace {
// What an entry costs beyond its strings: the list node, the index slot, the shared_ptr's
// control block.
constexpr std::size_t kEntryOverhead = 160;
}  // namespace

ReplayCache::ReplayCache(const Store& store, Options options, std::shared_ptr<const Clock> clock)
    : store_(store),
      max_bytes_(options.max_bytes),
      shared_ttl_(options.shared_ttl),
      clock_(clock ? std::move(clock) : std::make_shared<SystemClock>()),
      shards_(kShards) {
  if (std::optional<std::uint64_t> f = store_.foreign_writes()) {
    foreign_seen_.store(*f);
    foreign_known_.store(true);
  }
}

std::string ReplayCache::make_id(std::string_view scope, std::string_view key) {
  std::string id;
  id.reserve(scope.size() + key.size() + 1);
  id.append(scope).push_back('\0');
  id.append(key);
  return id;
}

ReplayCache::Shard& ReplayCache::shard_of(std::string_view id) {
  return shards_[std::hash<std::string_view>{}(id) % kShards];
}

void ReplayCache::drop(Shard& s, std::list<Entry>::iterator it) {
  s.index.erase(std::string_view(it->id));
  s.bytes -= it->size;
  bytes_.fetch_sub(it->size, std::memory_order_relaxed);
  s.lru.erase(it);
}

void ReplayCache::check_foreign() {
  const std::optional<std::uint64_t> now = store_.foreign_writes();
  if (!now) {
    // A store that could tell and now cannot (it failed to look): what was kept as exact
    // may be stale. Later entries live shared_ttl, as on a shared store.
    if (foreign_known_.exchange(false, std::memory_order_acq_rel)) clear();
    return;
  }
  if (foreign_known_.load(std::memory_order_acquire) && foreign_seen_.load(std::memory_order_acquire) == *now)
    return;
  // Someone else wrote the store: any record may be gone. Bump the generation first, so a
  // put with an older ticket is refused, then empty every shard.
  clear();
  foreign_seen_.store(*now, std::memory_order_release);
  foreign_known_.store(true, std::memory_order_release);
}

ReplayCache::Ticket ReplayCache::ticket() const {
  return Ticket{generation_.load(std::memory_order_acquire), store_.foreign_writes(), clock_->now()};
}

void ReplayCache::put(const Ticket& ticket, std::string_view scope, std::string_view key,
                      std::string_view fingerprint, std::shared_ptr<const std::string> stored,
                      Duration retention) {
  if (!enabled()) return;
  // Written by someone else since the ticket: that write may have removed this record.
  const std::optional<std::uint64_t> foreign = store_.foreign_writes();
  if (foreign != ticket.foreign) return;
  check_foreign();
  Entry e;
  e.id = make_id(scope, key);
  e.fingerprint = std::string(fingerprint);
  e.size = e.id.size() + e.fingerprint.size() + stored->size() + kEntryOverhead;
  if (e.size > max_bytes_ / kShards) return;  // would push out a whole shard
  e.stored = std::move(stored);
  e.expires_at = ticket.taken + retention;
  e.fresh_until =
      foreign ? std::chrono::steady_clock::time_point::max() : std::chrono::steady_clock::now() + shared_ttl_;
  Shard& s = shard_of(e.id);
  std::lock_guard lock(s.mu);
  // Checked under the shard's lock, which erase() holds while it bumps the generation: a
  // removal either comes after this put (and erases the entry) or refuses it here.
  if (generation_.load(std::memory_order_acquire) != ticket.generation) return;
  if (auto old = s.index.find(std::string_view(e.id)); old != s.index.end()) drop(s, old->second);
  s.lru.push_front(std::move(e));
  auto it = s.lru.begin();
  s.index.emplace(std::string_view(it->id), it);
  s.bytes += it->size;
  bytes_.fetch_add(it->size, std::memory_order_relaxed);
  while (s.bytes > max_bytes_ / kShards) drop(s, std::prev(s.lru.end()));
}

std::shared_ptr<const std::string> ReplayCache::get(std::string_view scope, std::string_view key,
                                                    std::string_view fingerprint) {
  if (!enabled() || bytes() == 0) return nullptr;
  check_foreign();
  const std::string id = make_id(scope, key);
  Shard& s = shard_of(id);
  std::lock_guard lock(s.mu);
  auto found = s.index.find(std::string_view(id));
  if (found == s.index.end()) return nullptr;
  auto it = found->second;
  if (clock_->now() >= it->expires_at || std::chrono::steady_clock::now() >= it->fresh_until) {
    drop(s, it);
    return nullptr;
  }
  if (it->fingerprint != fingerprint) return nullptr;
  s.lru.splice(s.lru.begin(), s.lru, it);
  hits_.fetch_add(1, std::memory_order_relaxed);
  return it->stored;
}

void ReplayCache::erase(std::string_view scope, std::string_view key) {
  const std::string id = make_id(scope, key);
  Shard& s = shard_of(id);
  std::lock_guard lock(s.mu);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  if (auto it = s.index.find(std::string_view(id)); it != s.index.end()) drop(s, it->second);
}

void ReplayCache::clear() {
  generation_.fetch_add(1, std::memory_order_acq_rel);
  for (Shard& s : shards_) {
    std::lock_guard lock(s.mu);
    s.index.clear();
    bytes_.fetch_sub(s.bytes, std::memory_order_relaxed);
    s.bytes = 0;
    s.lru.clear();
  }
}

}  // namespace idem::gateway
