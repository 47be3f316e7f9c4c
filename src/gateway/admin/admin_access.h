// Who may use the admin listener (docs/admin.md). With admin.token_env, records and the
// control API take `Authorization: Bearer <token>`. Without a token the listener serves
// this machine only: it binds to loopback addresses alone (config_checks.h), and refuses
// what a web page could make a browser send it — any request with an Origin field, or with
// a Host that is not a loopback name (DNS rebinding). Control-API POSTs take
// application/json only, which a cross-site form cannot send.
// Pure decisions over header values; safe for concurrent use.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string_view>

#include "gateway/http/request.h"
#include "gateway/problem.h"

namespace idem::gateway {

// The admin bearer token, held as its SHA-256 digest.
class AdminToken {
 public:
  // "" is no token: configured() is false and accepts() refuses everything.
  explicit AdminToken(std::string_view token);

  bool configured() const noexcept { return configured_; }

  // True when `authorization`, an Authorization field value, is `Bearer <token>`: the
  // scheme in any case, one or more spaces, then exactly the token. The token is compared
  // in constant time as a SHA-256 digest, so neither its bytes nor its length show in the
  // time a refusal takes.
  bool accepts(std::string_view authorization) const noexcept;

 private:
  bool configured_ = false;
  std::array<unsigned char, 32> digest_{};
};

// True when `host`, a Host field value, names this machine: `localhost` (any case), an
// IPv4 address in 127.0.0.0/8 written as four decimal numbers, or the IPv6 loopback
// address in brackets (`[::1]`, any spelling); each alone or with a port. Nothing else:
// not `*.localhost` nor other names that happen to resolve to a loopback address, since a
// browser's Host is the page's host name, and only these cannot be an attacker's.
bool is_loopback_host(std::string_view host) noexcept;

// For an admin listener without a token: `forbidden` when the request carries an Origin
// field (browsers add one to every cross-origin request and to every POST, so no web page
// can use the listener) or a Host field that fails is_loopback_host (a page whose host name
// was rebound to 127.0.0.1 still sends its own name). Applies to every admin path; nullopt
// when the request may be served. A request without Host (HTTP/1.0) passes: browsers
// always send one.
std::optional<Rejection> check_loopback_request(std::span<const HeaderField> headers);

// For a control-API POST: `unsupported_media_type` unless Content-Type is
// application/json (any case, parameters such as charset allowed); nullopt when it is.
std::optional<Rejection> check_json_request(std::span<const HeaderField> headers);

}  // namespace idem::gateway
