// Request bodies (docs/gateway.md, "Framing (RFC 9112)" and "Connections and bodies"): what a
// client's body may cost, and where it ends.
//  - BodyBudget: a cap on request-body bytes held in memory (a listener has one for all its
//    connections and one per client); a body that would go past one is refused (503
//    overloaded) instead of buffered.
//  - BudgetedBody: a body read whole, its memory taken from the budgets as its bytes arrive,
//    never from a declared length, so a socket that declares a large body and sends nothing
//    holds nothing.
//  - ChunkGuard: chunk extensions and trailers count against the header limit (each is
//    parsed from the connection buffer whole, so without a bound one socket could fill
//    memory), and trailer fields are discarded: never merged into the request's header
//    fields, never forwarded.
// BodyBudget is safe for concurrent use; a BodyReservation, BudgetedBody and ChunkGuard
// belong to one request.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>
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

// The bytes one request holds of its listener's budget and of its client's, given back
// when it ends.
class BodyReservation {
 public:
  // `client` may be null (no per-client cap).
  BodyReservation(BodyBudget& listener, BodyBudget* client) : listener_(listener), client_(client) {}
  ~BodyReservation() {
    listener_.give(held_);
    if (client_) client_->give(held_);
  }
  BodyReservation(const BodyReservation&) = delete;
  BodyReservation& operator=(const BodyReservation&) = delete;
  // Holds `n` more bytes of both; false (and nothing more held) when either would pass its
  // limit.
  bool take(std::uint64_t n) noexcept {
    if (!listener_.take(n)) return false;
    if (client_ && !client_->take(n)) {
      listener_.give(n);
      return false;
    }
    held_ += n;
    return true;
  }
  std::uint64_t held() const noexcept { return held_; }

 private:
  BodyBudget& listener_;
  BodyBudget* client_;
  std::uint64_t held_ = 0;
};

// A Beast Body (value_type, reader) for a request body read whole into a string, whose
// memory is taken from a BodyReservation as the body grows: a body holds at most twice the
// bytes it has received, or its first piece (16 KiB), and never more than its declared
// length or the read's limit; a declared Content-Length or chunk size reserves nothing by
// itself. A growth the reservation cannot take fails the read with `overloaded` set.
struct BudgetedBody {
  static constexpr std::size_t kFirstPiece = 16 * 1024;

  struct value_type {
    std::string data;
    BodyReservation* reservation = nullptr;  // set before the read
    std::uint64_t limit = 0;                 // the largest body the read takes; 0: none
    bool overloaded = false;
  };

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(boost::beast::http::header<isRequest, Fields>&, value_type& body) : body_(body) {}
    void init(const boost::optional<std::uint64_t>& length, boost::system::error_code& ec) {
      if (length) body_.limit = std::min<std::uint64_t>(body_.limit, *length);
      ec = {};
    }
    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, boost::system::error_code& ec) {
      const std::size_t n = boost::asio::buffer_size(buffers);
      if (!grow(n, ec)) return 0;
      for (const auto& b : boost::beast::buffers_range_ref(buffers))
        body_.data.append(static_cast<const char*>(b.data()), b.size());
      return n;
    }
    void finish(boost::system::error_code& ec) { ec = {}; }

   private:
    // Room for `n` more bytes, taken from the reservation first.
    bool grow(std::size_t n, boost::system::error_code& ec);
    value_type& body_;
  };
};

class ChunkGuard {
 public:
  enum class Failure { none, head_too_large, malformed };

  // `head_bytes`: the size of the request head already read.
  ChunkGuard(std::size_t header_limit, std::size_t head_bytes)
      : header_limit_(header_limit), used_(head_bytes) {}

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
