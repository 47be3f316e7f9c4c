// Where a request came from, as the upstream is told (docs/gateway.md, "Forwarding fields"),
// and whom to believe about it (`trusted_proxies`, docs/configuration.md). A client can
// write any field, so a field that says where a request came from or how (Forwarded,
// X-Forwarded-For, -Proto, -Host, -Port, -Prefix, -Ssl, X-Real-IP, Front-End-Https, ...)
// is believed only from a peer the operator lists as a trusted proxy: from any other peer
// each is removed or overwritten before the request is forwarded, so a client cannot claim
// TLS it did not use or a host that poisons the links a service builds (a password-reset
// link). From a trusted proxy they pass, and Forwarded and X-Forwarded-For are appended to
// (RFC 7239 §4), so a service behind a TLS proxy and the gateway still sees `https`.
// Pure (no I/O); a TrustedProxies is immutable once built and safe to share between threads.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "idem/status.h"

namespace idem::gateway {

// An IP address, IPv4 held IPv4-mapped (::ffff:a.b.c.d) so that one range type covers both
// and an IPv4 client of an IPv6 socket matches an IPv4 range.
struct IpAddress {
  std::array<std::uint8_t, 16> bytes{};
  bool v4 = false;

  friend bool operator==(const IpAddress&, const IpAddress&) = default;
};

// "192.0.2.7" or "2001:db8::1". With `lenient`, as X-Forwarded-For entries come from
// proxies that add ports or brackets: also surrounded by spaces or tabs, "[2001:db8::1]",
// "[2001:db8::1]:443" and "192.0.2.7:443". nullopt for anything else (names, "unknown",
// zone ids such as "fe80::1%eth0").
std::optional<IpAddress> parse_ip(std::string_view text, bool lenient = false) noexcept;

// The address in its usual text: "192.0.2.7", "2001:db8::1" (RFC 5952).
std::string to_string(const IpAddress& a);

// An address and a prefix length, over the 128 bits of the IPv4-mapped form.
struct IpRange {
  IpAddress base;
  unsigned prefix = 128;

  bool contains(const IpAddress& a) const noexcept;
  friend bool operator==(const IpRange&, const IpRange&) = default;
};

// "10.0.0.0/8", "2001:db8::/32" (an IPv4 prefix counts IPv4's 32 bits), or one address
// ("192.0.2.7", "::1"). Refused: anything else, a prefix past the address's length, and
// bits set past the prefix ("10.0.0.1/8": a typo more likely than meant).
Result<IpRange> parse_ip_range(std::string_view text);

// The peers whose forwarding fields are believed: `trusted_proxies` in the config. Empty
// (the default) trusts no one.
class TrustedProxies {
 public:
  TrustedProxies() = default;
  explicit TrustedProxies(std::vector<IpRange> ranges) : ranges_(std::move(ranges)) {}

  bool empty() const noexcept { return ranges_.empty(); }
  bool contains(const IpAddress& a) const noexcept;
  // `address` as RequestMeta::client holds it ("192.0.2.7", "::1"); false when it is not an
  // address ("unknown").
  bool contains(std::string_view address) const noexcept;
  const std::vector<IpRange>& ranges() const noexcept { return ranges_; }

  friend bool operator==(const TrustedProxies&, const TrustedProxies&) = default;

 private:
  std::vector<IpRange> ranges_;
};

// The client a request came from: `peer` itself when it is not a trusted proxy. From a
// trusted proxy, its X-Forwarded-For entries (`xff`: the fields' values in order, each a
// comma-separated list) read from the right, as nginx's real_ip_recursive reads them: the
// first address that is not a trusted proxy; when every entry is one, the leftmost; an
// entry that is not an address ends the walk at the last address before it (the one the
// trusted chain vouches for); without entries, the peer. In to_string's form when parsed.
std::string resolve_client(std::string_view peer, std::span<const std::string_view> xff,
                           const TrustedProxies& trusted);

// How the forwarding treats a request field (forwarding_field).
enum class ForwardingField {
  none,             // any other field: forwarded as it is
  forwarded,        // Forwarded (RFC 7239): kept from a trusted proxy; appended to
  forwarded_for,    // X-Forwarded-For: kept from a trusted proxy; appended to
  forwarded_proto,  // X-Forwarded-Proto: kept from a trusted proxy; else set to "http"
  other,            // kOtherForwardingFields: kept from a trusted proxy, else removed
};

// Fields that tell a service how or from where a request reached the front of the chain,
// read by common frameworks and servers (lower case): Spring's ForwardedHeaderFilter and
// Tomcat's RemoteIpValve (X-Forwarded-Host, -Port, -Prefix), Rails and Rack
// (X-Forwarded-Host, -Port, -Ssl, -Scheme), Django (X-Forwarded-Host, -Port), gunicorn
// (X-Forwarded-Protocol, -Ssl), Werkzeug's ProxyFix (X-Forwarded-Prefix), ASP.NET Core
// (X-Forwarded-Host, -Prefix), Microsoft's Front-End-Https, nginx's X-Real-IP and
// real_ip_header, and the client-address fields of several load balancers.
inline constexpr std::array<std::string_view, 13> kOtherForwardingFields = {
    "x-forwarded-host",   "x-forwarded-port",   "x-forwarded-prefix",   "x-forwarded-ssl",
    "x-forwarded-scheme", "x-forwarded-server", "x-forwarded-protocol", "x-real-ip",
    "x-client-ip",        "true-client-ip",     "x-url-scheme",         "x-scheme",
    "front-end-https"};

// Which forwarding field `name` is, in any case.
ForwardingField forwarding_field(std::string_view name) noexcept;

// The element of Forwarded (RFC 7239 §4) this gateway adds for a request from `peer`:
// "for=192.0.2.7;proto=http"; an IPv6 node quoted in brackets (for="[2001:db8::1]");
// "for=unknown" when the peer is not an address. `proto` is always http: the listener
// speaks plain HTTP.
std::string forwarded_element(std::string_view peer);

// A request that came over the TLS client listener (docs/configuration.md, "TLS on the client listener"): the
// forwarding fields this hop wrote say `https`. `head` is a forwarded head as written
// (the fields of add_forwarding_fields and forward_request): its X-Forwarded-Proto "http"
// becomes "https" unless `proxy_proto` (a trusted proxy sent the protocol its client used,
// which is kept), and this hop's Forwarded element (the last) gets proto=https.
void forwarded_over_tls(std::string& head, bool proxy_proto);
// This hop's Forwarded element in `value` (the last one) with proto=https.
std::string forwarded_value_over_tls(std::string_view value);

}  // namespace idem::gateway
