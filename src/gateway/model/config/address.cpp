#include "gateway/model/config/address.h"

#include <algorithm>
#include <charconv>

#include <boost/url/ipv4_address.hpp>
#include <boost/url/ipv6_address.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include "idem/store_uri.h"
#include "util/ascii.h"

namespace idem::gateway {
namespace {

namespace urls = boost::urls;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A port of 1–5 digits no greater than 65535; nothing else.
Result<std::uint16_t> parse_port(std::string_view text) {
  if (text.empty()) return invalid_argument("missing port");
  if (text.size() > 5 || !std::all_of(text.begin(), text.end(), is_digit)) {
    return invalid_argument("port '" + std::string(text) + "' is not a number from 0 to 65535");
  }
  unsigned value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  if (value > 65535) return invalid_argument("port " + std::string(text) + " is above 65535");
  return static_cast<std::uint16_t>(value);
}

// An IPv4 address, or a DNS name of letters, digits, '-' and '.'.
Status check_host(std::string_view host) {
  if (host.empty()) return invalid_argument("missing host");
  if (std::all_of(host.begin(), host.end(), [](char c) { return is_digit(c) || c == '.'; })) {
    if (!urls::parse_ipv4_address(host)) {
      return invalid_argument("'" + std::string(host) + "' is not an IPv4 address");
    }
    return Status::ok();
  }
  bool name = std::all_of(host.begin(), host.end(), [](char c) {
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '.';
  });
  if (!name) return invalid_argument("'" + std::string(host) + "' is not an IP address or a host name");
  return Status::ok();
}

}  // namespace

std::string ListenAddress::to_string() const {
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

bool ListenAddress::is_loopback() const {
  if (util::iequals(host, "localhost")) return true;
  if (auto v4 = urls::parse_ipv4_address(host)) return v4->is_loopback();
  if (auto v6 = urls::parse_ipv6_address(host)) return v6->is_loopback();
  return false;
}

Result<ListenAddress> parse_listen_address(std::string_view text) {
  ListenAddress a;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    std::size_t close = text.find(']');
    if (close == std::string_view::npos)
      return invalid_argument("'[' without ']' in '" + std::string(text) + "'");
    a.host = std::string(text.substr(1, close - 1));
    if (!urls::parse_ipv6_address(a.host)) {
      return invalid_argument("'" + a.host + "' is not an IPv6 address");
    }
    if (close + 1 >= text.size() || text[close + 1] != ':') {
      return invalid_argument("expected HOST:PORT, such as [::1]:8080");
    }
    port = text.substr(close + 2);
  } else {
    std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return invalid_argument("expected HOST:PORT or :PORT, such as 127.0.0.1:8080 or :8080, got '" +
                              std::string(text) + "'");
    }
    a.host = std::string(text.substr(0, colon));
    if (a.host.find(':') != std::string::npos) {
      return invalid_argument("an IPv6 address is written in brackets, such as [::1]:8080");
    }
    if (!a.every_interface()) {
      if (Status s = check_host(a.host); !s) return s;
    }
    port = text.substr(colon + 1);
  }
  Result<std::uint16_t> p = parse_port(port);
  if (!p) return p.status();
  a.port = *p;
  return a;
}

Result<UpstreamUrl> parse_upstream_url(std::string_view text) {
  auto parsed = urls::parse_absolute_uri(text);
  if (!parsed)
    return invalid_argument("'" + std::string(text) +
                            "' is not an absolute URL, such as http://127.0.0.1:9000");
  const urls::url_view& u = *parsed;
  if (u.scheme_id() != urls::scheme::http && u.scheme_id() != urls::scheme::https) {
    return invalid_argument("scheme '" + std::string(u.scheme()) + "' is not supported: http:// or https://");
  }
  if (u.has_userinfo())
    return invalid_argument("user info (user:password@) is not supported in the upstream URL");
  if (u.has_query() || u.has_fragment()) {
    return invalid_argument("the upstream URL may not have a query or a fragment");
  }
  UpstreamUrl up;
  up.text = std::string(text);
  up.tls = u.scheme_id() == urls::scheme::https;
  if (up.tls) up.port = 443;
  switch (u.host_type()) {
    case urls::host_type::ipv4:
    case urls::host_type::ipv6:
      up.host = std::string(u.host_address());
      break;
    case urls::host_type::name:
      up.host = std::string(u.host());
      if (up.host.empty()) return invalid_argument("the upstream URL has no host");
      if (Status s = check_host(up.host); !s) return s;
      break;
    default:
      return invalid_argument("the upstream URL has no usable host");
  }
  if (up.host.empty()) return invalid_argument("the upstream URL has no host");
  if (u.has_port()) {
    Result<std::uint16_t> p = parse_port(u.port());
    if (!p) return p.status();
    if (*p == 0) return invalid_argument("upstream port 0 is not a port one can connect to");
    up.port = *p;
  }
  std::string_view path = u.encoded_path();
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  up.base_path = std::string(path);
  return up;
}

Status check_store_uri(std::string_view uri, bool whole) {
  const char* expected =
      "expected memory:, sqlite:PATH, redis://HOST:PORT, redis-cluster://HOST:PORT, "
      "redis+sentinel://HOST:PORT/MASTER, rediss://HOST:PORT, postgres://... or mysql://...";
  if (Status s = check_uri_userinfo(uri); !s) return s;
  std::size_t colon = uri.find(':');
  if (colon == std::string_view::npos) {
    return invalid_argument("'" + redact_uri(uri) + "' has no scheme (" + expected + ")");
  }
  std::string_view scheme = uri.substr(0, colon);
  std::string_view rest = uri.substr(colon + 1);
  if (scheme == "memory") {
    if (!rest.empty()) return invalid_argument("memory: takes no parameters");
    return Status::ok();
  }
  if (scheme == "sqlite") {
    if (rest.substr(0, rest.find('?')).empty())
      return invalid_argument("sqlite: needs a file path, such as sqlite:./idem.db");
    return Status::ok();
  }
  // The Redis schemes are parsed whole (idem/open.h), as opening the store would.
  const bool redis = scheme == "redis" || scheme == "redis-cluster" || scheme == "redis+sentinel" ||
                     scheme == "rediss" || scheme == "rediss-cluster" || scheme == "rediss+sentinel";
  if (redis && whole && rest.starts_with("//") && rest.size() > 2) return check_redis_uri(uri);
  if (redis || scheme == "postgres" || scheme == "postgresql" || scheme == "mysql") {
    if (rest.size() <= 2 || rest.substr(0, 2) != "//") {
      return invalid_argument(std::string(scheme) + ": needs a host, such as " + std::string(scheme) +
                              "://127.0.0.1:" +
                              (scheme.substr(0, 5) == "redis" ? "6379"
                               : scheme == "mysql"            ? "3306"
                                                              : "5432"));
    }
    return Status::ok();
  }
  return invalid_argument("unknown store scheme '" + std::string(scheme) + "' (" + expected + ")");
}

}  // namespace idem::gateway
