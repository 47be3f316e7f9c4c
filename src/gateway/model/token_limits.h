// How many one-time tokens the tokens endpoint may issue (docs/http.md, "One-time tokens";
// `tokens.max_live` and `tokens.per_client`, docs/configuration.md). Each token is a row or
// key in the store until its ttl passes, issued to anyone who asks: without a bound, one
// connection filled a SQLite file by 70 MB per 100k tokens, and a Redis that may not evict
// until every route answered 503 (issue 29). Two bounds:
//  - per client: a bucket of `per_client` tokens, refilled evenly over a minute (IPv6
//    clients counted per /64, which one host usually holds whole); 0 turns it off;
//  - in all: at most `max_live` tokens issued within the last `ttl`, so at most that many
//    tokens of this gateway are unexpired in the store at any moment.
// A request past either is refused with the time after which one is issued again. Pure:
// the caller passes the time (a steady clock's). Safe for concurrent use (one mutex; a
// decision is a few hash-map operations).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "idem/clock.h"

namespace idem::gateway {

struct TokenLimits {
  std::uint64_t max_live = 100'000;
  std::uint64_t per_client = 60;  // per minute; 0: no per-client bound
  Duration ttl = std::chrono::minutes(10);
};

class TokenLimiter {
 public:
  using Steady = std::chrono::steady_clock;

  enum class Refusal { none, client, live };
  struct Verdict {
    Refusal refusal = Refusal::none;  // none: issue (the token is counted)
    Duration retry_after{};           // when refused: after this, one would be issued
    explicit operator bool() const noexcept { return refusal == Refusal::none; }
  };

  // Counts a token for `client` (an address, RequestMeta::origin) when both bounds allow
  // it; otherwise counts nothing and says which bound refused and for how long.
  Verdict take(std::string_view client, const TokenLimits& limits, Steady::time_point now);

  // Clients whose bucket is not full (held in memory): at most one per client that took a
  // token within the last minute, since full buckets are dropped as the table grows.
  std::size_t clients() const;

 private:
  // The tokens issued within the last ttl, by slot: a slot is ttl/kSlots long, and a token
  // counts until the slot after its own has aged a whole ttl (an upper bound on its life).
  static constexpr std::size_t kSlots = 64;
  struct Slot {
    std::int64_t epoch = -1;  // which period of slot length this slot counts
    std::uint64_t count = 0;
  };
  struct Bucket {
    double tokens;
    Steady::time_point at;
  };
  std::uint64_t live_locked(std::int64_t epoch) const;
  void prune_locked(const TokenLimits& limits, Steady::time_point now);

  mutable std::mutex mu_;
  Duration slot_length_{};  // of the ttl the slots were counted for
  std::array<Slot, kSlots + 1> slots_{};
  std::unordered_map<std::string, Bucket> buckets_;
  std::size_t prune_at_ = 1024;  // prune full buckets when the table reaches this size
};

// The key a client's bucket is kept under: the IPv4 address, the /64 of an IPv6 one, or
// the text itself when it is not an address.
std::string token_client_key(std::string_view client);

}  // namespace idem::gateway
