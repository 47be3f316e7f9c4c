#include "gateway/model/token_limits.h"

#include <algorithm>
#include <cmath>

#include "gateway/model/forwarding.h"

namespace idem::gateway {
namespace {

constexpr double kSecondsPerRefill = 60.0;  // per_client is a number per minute

Duration seconds(double s) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(std::max(s, 0.0)));
}

}  // namespace

std::string token_client_key(std::string_view client) {
  std::optional<IpAddress> a = parse_ip(client);
  if (!a || a->v4) return a ? to_string(*a) : std::string(client);
  std::fill(a->bytes.begin() + 8, a->bytes.end(), 0);
  return to_string(*a) + "/64";
}

std::uint64_t TokenLimiter::live_locked(std::int64_t epoch) const {
  std::uint64_t n = 0;
  for (const Slot& s : slots_)
    if (s.epoch >= 0 && s.epoch > epoch - static_cast<std::int64_t>(slots_.size())) n += s.count;
  return n;
}

void TokenLimiter::prune_locked(const TokenLimits& limits, Steady::time_point now) {
  const double capacity = static_cast<double>(limits.per_client);
  const double rate = capacity / kSecondsPerRefill;
  std::erase_if(buckets_, [&](const auto& entry) {
    const double elapsed = std::chrono::duration<double>(now - entry.second.at).count();
    return entry.second.tokens + elapsed * rate >= capacity;
  });
  prune_at_ = std::max<std::size_t>(1024, 2 * buckets_.size());
}

TokenLimiter::Verdict TokenLimiter::take(std::string_view client, const TokenLimits& limits,
                                         Steady::time_point now) {
  std::lock_guard lock(mu_);
  // A slot is ttl/kSlots, rounded up, so kSlots of them cover a whole ttl.
  const Duration slot = std::max<Duration>(
      Duration(1), Duration((limits.ttl.count() + static_cast<Duration::rep>(kSlots) - 1) / kSlots));
  const std::int64_t epoch = now.time_since_epoch() / slot;
  if (slot != slot_length_) {
    // The first call, or a reload changed the ttl: what was counted counts on, from now.
    std::uint64_t counted = 0;
    for (Slot& s : slots_) {
      if (s.epoch >= 0) counted += s.count;
      s = Slot{};
    }
    slot_length_ = slot;
    if (counted) slots_[static_cast<std::size_t>(epoch) % slots_.size()] = Slot{epoch, counted};
  }

  std::string key;
  double tokens = 0;
  if (limits.per_client > 0) {
    const double capacity = static_cast<double>(limits.per_client);
    const double rate = capacity / kSecondsPerRefill;
    key = token_client_key(client);
    tokens = capacity;
    if (auto it = buckets_.find(key); it != buckets_.end()) {
      const double elapsed = std::chrono::duration<double>(now - it->second.at).count();
      tokens = std::min(capacity, it->second.tokens + elapsed * rate);
    }
    if (tokens < 1.0) return Verdict{Refusal::client, seconds((1.0 - tokens) / rate)};
  }

  if (live_locked(epoch) >= limits.max_live) {
    // The oldest slot still counted frees its tokens when it leaves the window.
    std::int64_t oldest = epoch;
    for (const Slot& s : slots_)
      if (s.count > 0 && s.epoch >= 0 && s.epoch > epoch - static_cast<std::int64_t>(slots_.size()))
        oldest = std::min(oldest, s.epoch);
    const auto frees = Steady::time_point(slot * (oldest + static_cast<std::int64_t>(slots_.size())));
    return Verdict{Refusal::live, std::chrono::duration_cast<Duration>(frees - now)};
  }

  Slot& current = slots_[static_cast<std::size_t>(epoch) % slots_.size()];
  if (current.epoch != epoch) current = Slot{epoch, 0};
  ++current.count;
  if (limits.per_client > 0) {
    buckets_.insert_or_assign(std::move(key), Bucket{tokens - 1.0, now});
    if (buckets_.size() >= prune_at_) prune_locked(limits, now);
  }
  return Verdict{};
}

std::size_t TokenLimiter::clients() const {
  std::lock_guard lock(mu_);
  return buckets_.size();
}

}  // namespace idem::gateway
