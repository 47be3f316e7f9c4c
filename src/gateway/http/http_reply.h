// HTTP building blocks shared by the gateway's listeners and its upstream client: the
// message types, problem+json replies (docs/http.md, "Every problem"), Retry-After and hop-by-hop handling.
// Problem → status comes from problem.h, the one place that maps them.
// Pure functions; safe for concurrent use.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/beast/http.hpp>

#include "gateway/model/hop_by_hop.h"
#include "gateway/model/problem.h"
#include "idem/clock.h"

namespace idem::gateway {

namespace http = boost::beast::http;
using HttpRequest = http::request<http::string_body>;
using HttpResponse = http::response<http::string_body>;

// An application/problem+json reply (docs/http.md, "Every problem"):
// {"type":"urn:idem:problem:<name>","title":...,"status":...,"detail":...,
//  "instance":"urn:uuid:<fresh uuid>","retryable":<problem_retryable>}.
HttpResponse problem_response(Problem p, std::string_view detail, unsigned version, bool keep_alive,
                              std::optional<Duration> retry_after = std::nullopt);

// Names the request in the "instance" of a problem the gateway made itself (its type is
// urn:idem:problem:..., it is not a replay): problem_instance(request_id), so the client's
// instance leads to the request log line. Any other response is left as it is.
void name_problem_instance(HttpResponse& res, std::string_view request_id);

// A JSON reply (admin listener, control API, token issue).
HttpResponse json_response(http::status status, std::string body, unsigned version, bool keep_alive);

// String views collected without allocating while they are few (the values of a field
// that rarely repeats, the names a Connection field lists); past kInline they move to
// the heap.
class ViewList {
 public:
  void push_back(std::string_view v) {
    if (n_ == kInline) many_.assign(inline_.begin(), inline_.end());
    if (n_ >= kInline)
      many_.push_back(v);
    else
      inline_[n_] = v;
    ++n_;
  }
  std::span<const std::string_view> views() const noexcept {
    return n_ > kInline ? std::span<const std::string_view>(many_)
                        : std::span<const std::string_view>(inline_.data(), n_);
  }
  std::span<std::string_view> views() noexcept {
    return n_ > kInline ? std::span<std::string_view>(many_)
                        : std::span<std::string_view>(inline_.data(), n_);
  }

 private:
  static constexpr std::size_t kInline = 8;
  std::array<std::string_view, kInline> inline_{};
  std::vector<std::string_view> many_;
  std::size_t n_ = 0;
};

// Calls `fn` with each name the Connection fields of `fields` list (RFC 9110 §7.6.1), as
// a view into those fields.
template <class Fn>
void for_each_connection_name(const http::fields& fields, Fn&& fn) {
  const auto [first, last] = fields.equal_range(http::field::connection);
  for (auto it = first; it != last; ++it) {
    for (std::string_view v = it->value(); !v.empty();) {
      const auto comma = v.find(',');
      std::string_view name = v.substr(0, comma);
      while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) name.remove_prefix(1);
      while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
      if (!name.empty()) fn(name);
      v = comma == std::string_view::npos ? std::string_view{} : v.substr(comma + 1);
    }
  }
}

// The names the Connection fields of a message list (for_each_connection_name), as views
// into those fields, sorted once so that asking of each field whether it is listed costs
// O(log n): a pass over the fields stays linear in them however long the list is (a head of
// 4,000 fields and a Connection list as long cost 16 million comparisons before: issue 29).
class ConnectionNames {
 public:
  explicit ConnectionNames(const http::fields& fields);
  // Whether `name` is listed, in any case.
  bool contains(std::string_view name) const noexcept;
  bool empty() const noexcept { return names_.views().empty(); }

 private:
  ViewList names_;
};

// kHopByHopFields (hop_by_hop.h) by Beast's code for the name. Beast knows each of those
// names (whatever their case; a test checks), so a field whose name it does not know is
// never one of them, and no name is compared as text.
bool is_hop_by_hop(http::field f) noexcept;

// Removes the hop-by-hop fields (is_hop_by_hop; Transfer-Encoding among them) and those the
// Connection field names. Content-Length stays: the caller recomputes it with prepare_payload(), except
// for answers to HEAD, where it describes the body a GET would have had.
void strip_hop_by_hop(http::fields& fields);

// The forwarded-request fields that the gateway alone may set (docs/http.md, "What to send").
inline constexpr std::string_view kFenceHeader = "Idempotency-Fence";
inline constexpr std::string_view kReplayedHeader = "Idempotent-Replayed";
inline constexpr std::string_view kStatusHeader = "Idempotency-Status";
// The response field a service sets to `true` to say "release the key, do not keep this
// answer" (docs/http.md, "Answers the service does not want kept"); removed from every
// response before the client sees it (make_client_response).
inline constexpr std::string_view kReleaseHeader = "Idempotency-Release";
inline constexpr std::string_view kForwardedForHeader = "X-Forwarded-For";
inline constexpr std::string_view kForwardedProtoHeader = "X-Forwarded-Proto";
inline constexpr std::string_view kForwardedHeader = "Forwarded";

}  // namespace idem::gateway
