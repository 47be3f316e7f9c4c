// What the gateway knows of a request besides its message (docs/observability.md): who
// sent it (the peer address) and its request id, the id that the upstream receives as
// X-Request-Id, the client gets back and the request log names. Plus the text helpers of
// the request log: JSON string escaping, bounded, for values an attacker chooses (path,
// request id, method). Pure; safe for concurrent use (the id generator is per thread).
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace idem::gateway {

// The longest X-Request-Id a client may send and have passed on (nginx and Envoy ids are
// 32 and 36 characters; W3C trace ids 32).
inline constexpr std::size_t kMaxRequestIdLength = 128;
inline constexpr std::string_view kRequestIdHeader = "X-Request-Id";

// True for 1 to kMaxRequestIdLength visible ASCII characters (0x21-0x7E): an id that is
// safe to pass on, log and echo. Anything else (empty, too long, spaces, control bytes,
// bytes above 0x7E) is replaced by a generated one.
bool is_sane_request_id(std::string_view id) noexcept;

// A request id held inline (it is made for every request: no allocation).
class RequestId {
 public:
  RequestId() = default;
  // `id` must be sane (is_sane_request_id); otherwise the result is a new random id.
  static RequestId from_client(std::string_view id) noexcept;
  // A random UUID version 4 in lowercase, 8-4-4-4-12 (122 bits from a per-thread generator
  // seeded from the system's entropy source: ids of different gateways do not collide).
  static RequestId generate() noexcept;

  std::string_view view() const noexcept { return {chars_.data(), size_}; }
  bool generated() const noexcept { return generated_; }

 private:
  std::array<char, kMaxRequestIdLength> chars_{};
  std::size_t size_ = 0;
  bool generated_ = false;
};

// True for a UUID written 8-4-4-4-12 in hex of either case (any version).
bool is_uuid(std::string_view id) noexcept;

// The problem+json "instance" of a request whose request id is `request_id`
// (docs/http.md, "Every problem"): "urn:uuid:<id>" when the id is a UUID (every generated
// id is), else "urn:idem:request:<id>" with each byte outside RFC 3986's unreserved set
// percent-encoded. Either way an operator finds the request log line by its request_id.
std::string problem_instance(std::string_view request_id);

// The request id for a request whose X-Request-Id fields are `values` (in arrival order):
// the client's, when it sent exactly one and it is sane; otherwise a generated one (the
// forwarded request then carries only that).
RequestId choose_request_id(std::span<const std::string_view> values) noexcept;

// The request's context: the peer address (the IP without port, "127.0.0.1" or "::1"; an
// IPv4 client on an IPv6 socket as IPv4), its request id, and whether the peer is a
// trusted proxy (`trusted_proxies`, forwarding.h). `client` views a string that lives as
// long as the connection.
struct RequestMeta {
  std::string_view client;
  RequestId request_id;
  // The peer is a trusted proxy: the forwarding fields it sent are kept and appended to.
  // Otherwise each is removed or overwritten (forwarding.h).
  bool trusted_peer = false;
  // From a trusted proxy, the client its X-Forwarded-For names (resolve_client); else empty.
  std::string forwarded_client;
  // The request came over the TLS client listener: the upstream is told `https`
  // (forwarded_over_tls).
  bool tls = false;

  // Who sent the request: the client a trusted proxy names, else the peer. What the request
  // log's `client` says and what per-client limits count.
  std::string_view origin() const noexcept { return forwarded_client.empty() ? client : forwarded_client; }
};

// The X-Forwarded-For value the upstream receives: the client's own value(s) with `client`
// appended ("a, b, client"), or `client` alone when the client sent none. Several fields
// are combined in order, as RFC 9110 §5.3 allows; empty ones are skipped. The caller passes
// the existing values only from a trusted proxy.
std::string forwarded_for(std::span<const std::string_view> existing, std::string_view client);

// Appends `text` to `out` as a JSON string, quotes included: '"', '\\' and control
// characters escaped, valid UTF-8 kept, each byte of invalid UTF-8 written as U+FFFD. At
// most `max_bytes` bytes of `text` are taken (never half a character); a cut value ends
// in "...". The result is always valid JSON, whatever `text` holds.
void append_json_string(std::string& out, std::string_view text, std::size_t max_bytes);

}  // namespace idem::gateway
