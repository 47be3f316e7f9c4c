// Who may use the admin listener (docs/admin.md). With admin.token_env, the operator's
// page, records and the control API take `Authorization: Bearer <token>`, or HTTP Basic
// with the token as the password (what a browser sends once it has asked the operator).
// Without a token the listener serves this machine only: it binds to loopback addresses
// alone (config_checks.h), and refuses what a web page could make a browser send it — any
// request with a Host that is not a loopback name (DNS rebinding). Token or not, a request
// whose Origin is not the listener's own (`http://` + its Host) is refused, so no other
// site's page can act with the credentials a browser adds by itself. Control-API POSTs
// take application/json only, which a cross-site form cannot send.
// Pure decisions over header values; safe for concurrent use.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/model/problem.h"
#include "gateway/model/request_view.h"

namespace idem::gateway {

// The admin token, held as its SHA-256 digest.
class AdminToken {
 public:
  // "" is no token: configured() is false and accepts() refuses everything.
  explicit AdminToken(std::string_view token);

  bool configured() const noexcept { return configured_; }

  // True when `authorization`, an Authorization field value, is either
  //   `Bearer <token>`: the scheme in any case, one or more spaces, then exactly the token;
  //   `Basic <base64>`: the scheme in any case, one or more spaces, then the padded
  //     base64 (RFC 4648 §4) of `user:password`, any user name (even empty), the password
  //     (everything after the first ':') exactly the token.
  // The token is compared in constant time as a SHA-256 digest, so neither its bytes nor
  // its length show in the time a refusal takes.
  bool accepts(std::string_view authorization) const noexcept;

 private:
  bool configured_ = false;
  std::array<unsigned char, 32> digest_{};
};

// The admin listener's tokens, each with a name and roles (docs/admin.md, "Tokens and
// roles"): admin.token_env's, and those of admin.tokens.
class AdminTokens {
 public:
  struct Named {
    std::string name;
    std::string token;   // not empty
    unsigned roles = 0;  // config.h's kRoleControl | kRoleOperator
  };
  // Who presented a token: its name and roles.
  struct Caller {
    std::string name;
    unsigned roles = 0;
  };

  AdminTokens() = default;
  explicit AdminTokens(const std::vector<Named>& tokens);

  bool configured() const noexcept { return !tokens_.empty(); }

  // The token `authorization` presents (in either form AdminToken::accepts takes), or
  // nullopt. Every token is compared, in constant time as a SHA-256 digest, whichever
  // matches, so the time a refusal takes shows neither a token nor how many there are
  // before it; when two tokens are equal, the first is the caller.
  std::optional<Caller> match(std::string_view authorization) const;

 private:
  struct Entry {
    Caller caller;
    std::array<unsigned char, 32> digest{};
  };
  std::vector<Entry> tokens_;
};

// True when `host`, a Host field value, names this machine: `localhost` (any case), an
// IPv4 address in 127.0.0.0/8 written as four decimal numbers, or the IPv6 loopback
// address in brackets (`[::1]`, any spelling); each alone or with a port. Nothing else:
// not `*.localhost` nor other names that happen to resolve to a loopback address, since a
// browser's Host is the page's host name, and only these cannot be an attacker's.
bool is_loopback_host(std::string_view host) noexcept;

// The challenges of a 401 from the admin listener, one WWW-Authenticate field each: Bearer
// for programs, Basic so that a browser asks the operator for the token.
inline constexpr std::array<std::string_view, 2> kAdminChallenges = {R"(Bearer realm="idem admin")",
                                                                     R"(Basic realm="idem admin")"};

// True when `origin`, an Origin field value, is the origin of a page this listener served
// to a browser that reached it as `host` (the Host field value): exactly `http://` + host,
// in any case (browsers write both in lowercase). An empty host has no origin.
bool is_own_origin(std::string_view origin, std::string_view host) noexcept;

// `forbidden` when the request carries an Origin field that fails is_own_origin against
// its Host field — another site's page (browsers add Origin to every cross-origin request
// and to every POST and DELETE), a sandboxed one (`null`), or several Origin or Host
// fields. A request without Origin (curl, probes, client libraries, a browser's
// navigation or same-origin GET) passes. nullopt when the request may be served.
std::optional<Rejection> check_origin(std::span<const HeaderField> headers);

// For an admin listener without a token: `forbidden` when the request carries a Host
// field that fails is_loopback_host (a page whose host name was rebound to 127.0.0.1 still
// sends its own name) or fails check_origin. Applies to every admin path; nullopt when the
// request may be served. A request without Host (HTTP/1.0) passes unless it has an Origin:
// browsers always send Host.
std::optional<Rejection> check_loopback_request(std::span<const HeaderField> headers);

// For a control-API POST: `unsupported_media_type` unless Content-Type is
// application/json (any case, parameters such as charset allowed); nullopt when it is.
std::optional<Rejection> check_json_request(std::span<const HeaderField> headers);

}  // namespace idem::gateway
