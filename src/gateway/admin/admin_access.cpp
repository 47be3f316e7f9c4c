#include "gateway/admin/admin_access.h"

#include <algorithm>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <boost/url/ipv4_address.hpp>
#include <boost/url/ipv6_address.hpp>

#include "core/ascii.h"

namespace idem::gateway {
namespace {

namespace urls = boost::urls;

using Digest = std::array<unsigned char, 32>;

Digest sha256(std::string_view text) noexcept {
  Digest d{};
  unsigned size = 0;
  // EVP_Digest fails only when out of memory; the zero digest then matches nothing real,
  // and a configured token's digest is never all zeros in practice.
  if (EVP_Digest(text.data(), text.size(), d.data(), &size, EVP_sha256(), nullptr) != 1) d.fill(0);
  return d;
}

// "" or ":" and 1–5 digits up to 65535.
bool valid_port_suffix(std::string_view rest) {
  if (rest.empty()) return true;
  if (rest.front() != ':') return false;
  rest.remove_prefix(1);
  if (rest.empty() || rest.size() > 5) return false;
  unsigned value = 0;
  for (char c : rest) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  return value <= 65535;
}

}  // namespace

AdminToken::AdminToken(std::string_view token) : configured_(!token.empty()) {
  if (configured_) digest_ = sha256(token);
}

bool AdminToken::accepts(std::string_view authorization) const noexcept {
  if (!configured_) return false;
  const auto space = authorization.find(' ');
  if (space == std::string_view::npos || !iequals(authorization.substr(0, space), "bearer")) return false;
  std::string_view presented = authorization.substr(space);
  while (!presented.empty() && presented.front() == ' ') presented.remove_prefix(1);
  const Digest d = sha256(presented);
  return CRYPTO_memcmp(d.data(), digest_.data(), d.size()) == 0;
}

bool is_loopback_host(std::string_view host) noexcept {
  if (host.starts_with('[')) {
    const auto close = host.find(']');
    if (close == std::string_view::npos) return false;
    auto v6 = urls::parse_ipv6_address(host.substr(1, close - 1));
    return v6 && v6->is_loopback() && valid_port_suffix(host.substr(close + 1));
  }
  const auto colon = host.find(':');
  const std::string_view name = host.substr(0, colon);
  if (!valid_port_suffix(colon == std::string_view::npos ? std::string_view() : host.substr(colon)))
    return false;
  if (iequals(name, "localhost")) return true;
  auto v4 = urls::parse_ipv4_address(name);
  return v4 && v4->is_loopback();
}

std::optional<Rejection> check_loopback_request(std::span<const HeaderField> headers) {
  for (const HeaderField& f : headers) {
    if (iequals(f.name, "origin"))
      return Rejection{Problem::forbidden,
                       "requests from web pages (with an Origin header) are refused; without "
                       "admin.token_env the admin listener serves programs on this machine only"};
    if (iequals(f.name, "host") && !f.value.empty() && !is_loopback_host(f.value))
      return Rejection{Problem::forbidden,
                       "the Host header must be localhost, 127.0.0.1 or [::1] (with any port); without "
                       "admin.token_env the admin listener serves programs on this machine only"};
  }
  return std::nullopt;
}

std::optional<Rejection> check_json_request(std::span<const HeaderField> headers) {
  std::optional<std::string> type = find_header(headers, "Content-Type");
  if (type && has_media_type(*type, "application/json")) return std::nullopt;
  return Rejection{Problem::unsupported_media_type, "the control API takes Content-Type: application/json"};
}

}  // namespace idem::gateway
