#include "gateway/pipeline/replay_cache.h"

#include <functional>

#include "gateway/pipeline/local_key.h"

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
  if (std::optional<std::uint64_t> f = store_.foreign_writes()) foreign_seen_.store(*f);
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

bool ReplayCache::still_exact(std::optional<std::uint64_t> now) {
  const std::uint64_t seen = foreign_seen_.load(std::memory_order_acquire);
  const std::uint64_t value = now ? *now : kUnknown;
  if (value == seen) return true;
  // Someone else wrote the store (any record may be gone), or a store that could tell no
  // longer can (it failed to look): what was kept may be stale. The new value first, so
  // that a ticket taken from here on carries it; then clear() bumps the generation, so a
  // put with an older ticket is refused, and empties every shard.
  foreign_seen_.store(value, std::memory_order_release);
  clear();
  return false;
}

ReplayCache::Ticket ReplayCache::ticket() const {
  // The foreign writes last seen, not asked afresh: get() asks, and a foreign write since
  // then (also one before this ticket: the safe side) makes the entry unusable.
  const std::uint64_t seen = foreign_seen_.load(std::memory_order_acquire);
  return Ticket{generation_.load(std::memory_order_acquire),
                seen == kUnknown ? std::nullopt : std::optional<std::uint64_t>(seen), clock_->now(),
                std::chrono::steady_clock::now()};
}

void ReplayCache::put(const Ticket& ticket, std::string_view scope, std::string_view key,
                      std::string_view fingerprint, std::shared_ptr<const std::string> stored,
                      Duration lives) {
  if (!enabled() || lives <= Duration::zero()) return;
  Entry e;
  e.id = local_key(scope, key);
  e.fingerprint = std::string(fingerprint);
  e.size = e.id.size() + e.fingerprint.size() + stored->size() + kEntryOverhead;
  if (e.size > max_bytes_ / kShards) return;  // would push out a whole shard
  e.stored = std::move(stored);
  e.expires_at = ticket.taken + lives;
  e.ends = ticket.steady + lives;
  // Valid while nobody else has written since the ticket: get() compares, so a put asks
  // the store nothing.
  e.foreign = ticket.foreign ? *ticket.foreign : kUnknown;
  e.fresh_until = ticket.foreign ? std::chrono::steady_clock::time_point::max()
                                 : std::chrono::steady_clock::now() + shared_ttl_;
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
  const std::string id = local_key(scope, key);
  Shard& s = shard_of(id);
  std::shared_ptr<const std::string> hit;
  std::uint64_t foreign_at_put = kUnknown;
  {
    std::lock_guard lock(s.mu);
    auto found = s.index.find(std::string_view(id));
    if (found == s.index.end()) return nullptr;
    auto it = found->second;
    const auto steady = std::chrono::steady_clock::now();
    if (steady >= it->ends || clock_->now() >= it->expires_at || steady >= it->fresh_until) {
      drop(s, it);
      return nullptr;
    }
    if (it->fingerprint != fingerprint) return nullptr;
    s.lru.splice(s.lru.begin(), s.lru, it);
    hit = it->stored;
    foreign_at_put = it->foreign;
  }
  // Asked only for a hit, after the lookup: a foreign write since the entry's ticket (one
  // before this request included) shows here. A change empties the cache.
  const std::optional<std::uint64_t> now = store_.foreign_writes();
  if (!still_exact(now)) return nullptr;
  if ((now ? *now : kUnknown) != foreign_at_put) {
    // Put under a ticket older than a foreign write the cache has already seen: never
    // usable again, so it goes rather than costing every later lookup a store call.
    std::lock_guard lock(s.mu);
    if (auto it = s.index.find(std::string_view(id)); it != s.index.end() && it->second->stored == hit)
      drop(s, it->second);
    return nullptr;
  }
  hits_.fetch_add(1, std::memory_order_relaxed);
  return hit;
}

void ReplayCache::erase(std::string_view scope, std::string_view key) {
  const std::string id = local_key(scope, key);
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
