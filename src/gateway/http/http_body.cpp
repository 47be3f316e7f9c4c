#include "gateway/http/http_body.h"

#include <algorithm>
#include <functional>
#include <iterator>

#include <boost/beast/http/error.hpp>

namespace idem::gateway {

bool BodyBudget::take(std::uint64_t n) noexcept {
  std::uint64_t used = used_.load(std::memory_order_relaxed);
  do {
    if (n > limit_ || used > limit_ - n) return false;
  } while (!used_.compare_exchange_weak(used, used + n, std::memory_order_relaxed));
  return true;
}

bool BudgetedBody::reader::grow(std::size_t n, boost::system::error_code& ec) {
  std::string& data = body_.data;
  const std::uint64_t need = data.size() + n;
  const std::uint64_t held = body_.reservation->held();
  ec = {};
  if (need <= held && need <= data.capacity()) return true;
  // Doubling (so a body is copied a bounded number of times), from a first piece, up to
  // what the body may become.
  const std::uint64_t doubled = std::max<std::uint64_t>(kFirstPiece, 2 * held);
  const std::uint64_t target = std::max({need, held, body_.limit ? std::min(doubled, body_.limit) : doubled});
  if (!body_.reservation->take(target - held)) {
    body_.overloaded = true;
    ec = boost::system::errc::make_error_code(boost::system::errc::not_enough_memory);
    return false;
  }
  data.reserve(static_cast<std::size_t>(target));
  return true;
}

void ChunkGuard::on_chunk(std::uint64_t, std::string_view extensions, boost::system::error_code& ec) {
  // Extensions carry nothing the gateway uses, yet each is parsed whole from the buffer:
  // all of them together count against the header limit.
  used_ += extensions.size();
  if (used_ > header_limit_) {
    failure_ = Failure::head_too_large;
    ec = boost::beast::http::error::header_limit;
  }
}

void ChunkGuard::read_failed(const boost::system::error_code& ec) noexcept {
  namespace http = boost::beast::http;
  if (failure_ != Failure::none) return;
  if (ec == http::error::buffer_overflow || ec == http::error::header_limit)
    failure_ = Failure::head_too_large;
  else if (ec.category() == http::make_error_code(http::error::bad_chunk).category() &&
           ec != http::error::end_of_stream && ec != http::error::partial_message &&
           ec != http::error::need_buffer)
    failure_ = Failure::malformed;
}

bool ChunkGuard::finish(boost::beast::http::fields& fields) {
  if (!chunked_) return true;  // only a chunked body ends in trailers
  if (static_cast<std::size_t>(std::distance(fields.begin(), fields.end())) == head_.size())
    return true;  // none came (the usual case)
  // Every field that is not one of the head's is a trailer.
  std::sort(head_.begin(), head_.end(), std::less<>());
  for (auto it = fields.begin(); it != fields.end();) {
    if (std::binary_search(head_.begin(), head_.end(), &*it, std::less<>())) {
      ++it;
      continue;
    }
    used_ += it->name_string().size() + it->value().size() + 4;  // "name: value\r\n"
    it = fields.erase(it);
  }
  if (used_ > header_limit_) {
    failure_ = Failure::head_too_large;
    return false;
  }
  return true;
}

}  // namespace idem::gateway
