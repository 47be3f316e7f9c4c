// Request bodies on the client listener (docs/gateway.md, "Framing (RFC 9112)" and "Memory"):
// what a client's body may cost, and where it ends.
//  - BodyBudget: one cap on the request-body bytes held in memory across all connections;
//    a request that would go past it is refused (503 overloaded) instead of buffered.
//  - ChunkGuard: chunk extensions and trailers count against the header limit (each is
//    parsed from the connection buffer whole, so without a bound one socket could fill
//    memory), and trailer fields are discarded: never merged into the request's header
//    fields, never forwarded.
// BodyBudget is safe for concurrent use; a ChunkGuard belongs to one request.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>
#include <vector>

#include <boost/beast/http/fields.hpp>
#include <boost/system/error_code.hpp>

namespace idem::gateway {

class BodyBudget {
 public:
  explicit BodyBudget(std::uint64_t limit) : limit_(limit) {}
  // Holds `n` more bytes; false (and nothing held) when that would pass the limit.
  bool take(std::uint64_t n) noexcept;
  void give(std::uint64_t n) noexcept { used_.fetch_sub(n, std::memory_order_relaxed); }
  std::uint64_t used() const noexcept { return used_.load(std::memory_order_relaxed); }
  std::uint64_t limit() const noexcept { return limit_; }

 private:
  const std::uint64_t limit_;
  std::atomic<std::uint64_t> used_{0};
};

// The bytes one request holds of a BodyBudget, given back when it ends.
class BodyReservation {
 public:
  explicit BodyReservation(BodyBudget& budget) : budget_(budget) {}
  ~BodyReservation() { budget_.give(held_); }
  BodyReservation(const BodyReservation&) = delete;
  BodyReservation& operator=(const BodyReservation&) = delete;
  bool take(std::uint64_t n) noexcept {
    if (!budget_.take(n)) return false;
    held_ += n;
    return true;
  }

 private:
  BodyBudget& budget_;
  std::uint64_t held_ = 0;
};

class ChunkGuard {
 public:
  enum class Failure { none, head_too_large, overloaded, malformed };

  // `head_bytes`: the size of the request head already read. `reservation`: where
  // buffered chunk data is held, or null for a body that is streamed rather than buffered.
  ChunkGuard(std::size_t header_limit, std::size_t head_bytes, BodyReservation* reservation)
      : header_limit_(header_limit), used_(head_bytes), reservation_(reservation) {}

  // Attach to a parser whose head is read, before its body is (Beast keeps a reference to
  // this guard's callback: the guard must outlive the parser's reads). A chunked body may
  // end in trailers: the head's fields are noted, to tell them apart.
  template <class Parser>
  void attach(Parser& parser) {
    if (!parser.chunked()) return;
    chunked_ = true;
    for (const auto& f : parser.get()) head_.push_back(&f);
    parser.on_chunk_header(callback_);
  }

  // After the body: removes trailer fields from `fields` and counts them. False when
  // extensions and trailers together passed the header limit (answer 431 and close).
  bool finish(boost::beast::http::fields& fields);

  // A read of the body failed with `ec`: notes a failure the client is to be told of (a
  // chunk line or trailer section too long for the buffer, a malformed chunk) rather than
  // a connection that just ended.
  void read_failed(const boost::system::error_code& ec) noexcept;

  // Why the body could not be read, when the client is to be told.
  Failure failure() const noexcept { return failure_; }

 private:
  void on_chunk(std::uint64_t size, std::string_view extensions, boost::system::error_code& ec);

  struct Callback {
    ChunkGuard* self;
    void operator()(std::uint64_t size, std::string_view ext, boost::system::error_code& ec) const {
      self->on_chunk(size, ext, ec);
    }
  };
  std::size_t header_limit_;
  std::size_t used_;  // head, chunk-extension and trailer bytes so far
  BodyReservation* reservation_;
  // The head's fields of a chunked request, by address. Beast files a trailer next to a
  // head field of the same name, and a trailer may repeat a head field exactly, so neither
  // position nor content tells them apart; but each field stays where it was put while
  // trailers are added. With trailers, one lookup per field: O(n log n) for n fields, where
  // matching by content cost O(n²) (16 million comparisons for 4,000 empty fields: issue 29).
  std::vector<const boost::beast::http::fields::value_type*> head_;
  bool chunked_ = false;
  Failure failure_ = Failure::none;
  Callback callback_{this};
};

}  // namespace idem::gateway
