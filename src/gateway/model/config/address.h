// The addresses a config names: listeners (`listen`, `admin.listen`), the upstream URL and
// the store URI. Parsing only, no resolution or I/O; each returns invalid_argument with a
// reason fit for "idem.yaml:3: listen: <reason>". Pure; safe for concurrent use.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "idem/status.h"

namespace idem::gateway {

// HOST:PORT: an IPv4 address, an IPv6 address in brackets ([::1]:8080) or a host name
// (localhost:8080); or :PORT alone, every interface (IPv6 and IPv4 where the system has
// IPv6, else IPv4). The port 0–65535 (0 = any free port, for tests).
struct ListenAddress {
  std::string host;  // as written, IPv6 without its brackets; "" for every interface
  std::uint16_t port = 0;

  // "127.0.0.1:8080", "[::1]:8080", "localhost:8080", ":8080".
  std::string to_string() const;
  // 127.0.0.0/8, ::1 or localhost: reachable from this machine only.
  bool is_loopback() const;
  // Written as :PORT: bound to every interface (not 0.0.0.0 or [::], which name one family).
  bool every_interface() const { return host.empty(); }

  friend bool operator==(const ListenAddress&, const ListenAddress&) = default;
};

Result<ListenAddress> parse_listen_address(std::string_view text);

// http://HOST[:PORT][/BASE] or https://...: the protected service. Other schemes, user
// info, a query or a fragment are refused (the gateway speaks HTTP/1.1 to its upstream,
// over TLS for https: docs/gateway.md, "TLS to upstreams").
struct UpstreamUrl {
  std::string text;         // as written
  bool tls = false;         // https://
  std::string host;         // a name or an IP address, IPv6 without brackets
  std::uint16_t port = 80;  // 443 for https:// by default
  std::string base_path;    // "" or "/api" (percent-encoded, no trailing '/'): prefixed to forwarded targets

  friend bool operator==(const UpstreamUrl&, const UpstreamUrl&) = default;
};

Result<UpstreamUrl> parse_upstream_url(std::string_view text);

// How an https:// upstream is checked (docs/configuration.md, "TLS to upstreams"): its
// certificate against `ca_file` (PEM) or the system's CA store, for `server_name` (also
// sent as SNI), or the URL's host. TLS 1.2 or later.
struct UpstreamTls {
  std::string ca_file;                // "" : the system's CA store
  std::string server_name;            // "" : the URL's host
  bool insecure_skip_verify = false;  // no check of the certificate at all

  friend bool operator==(const UpstreamTls&, const UpstreamTls&) = default;
};

// A check of a store URI (docs/configuration.md, "Stores") so that a typo fails at config load:
// a known scheme (memory:, sqlite:PATH, redis://, redis-cluster://, redis+sentinel://, rediss...,
// postgres://, mysql://) with the parts it needs; Redis URIs are parsed whole when `whole`
// (not when an unset variable left a part out). Opening the store (idem::open_store) checks
// the rest.
Status check_store_uri(std::string_view uri, bool whole = true);

}  // namespace idem::gateway
