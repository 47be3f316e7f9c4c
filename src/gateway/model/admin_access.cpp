#include "gateway/model/admin_access.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <boost/url/ipv4_address.hpp>
#include <boost/url/ipv6_address.hpp>

#include "util/ascii.h"

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

// The value of a base64 digit (RFC 4648 §4), or -1.
int base64_digit(char c) noexcept {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Padded base64, strictly: whole groups of four, '=' only as the last one or two
// characters. nullopt for anything else, so one credential has one spelling (bar the
// unused low bits of the last digit, which are ignored as RFC 4648 §3.5 allows).
std::optional<std::string> base64_decode(std::string_view text) {
  if (text.empty() || text.size() % 4 != 0) return std::nullopt;
  std::size_t pad = 0;
  while (pad < 2 && text[text.size() - 1 - pad] == '=') ++pad;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  std::uint32_t bits = 0;
  int nbits = 0;
  for (std::size_t i = 0; i < text.size() - pad; ++i) {
    const int d = base64_digit(text[i]);
    if (d < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<std::uint32_t>(d);
    nbits += 6;
    if (nbits >= 8) {
      nbits -= 8;
      out.push_back(static_cast<char>((bits >> nbits) & 0xFF));
    }
  }
  return out;
}

// `authorization` split at its first space into the scheme and the credentials (leading
// spaces removed); nullopt without a space.
std::optional<std::pair<std::string_view, std::string_view>> split_scheme(std::string_view authorization) {
  const auto space = authorization.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::string_view rest = authorization.substr(space);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return std::pair{authorization.substr(0, space), rest};
}

// The token an Authorization field value presents, or nullopt (AdminToken::accepts).
std::optional<std::string> presented_token(std::string_view authorization) noexcept {
  const auto parts = split_scheme(authorization);
  if (!parts) return std::nullopt;
  const auto [scheme, credentials] = *parts;
  std::optional<std::string> decoded;
  std::string_view presented;
  if (util::iequals(scheme, "bearer")) {
    presented = credentials;
  } else if (util::iequals(scheme, "basic")) {
    // Out of memory while decoding: refused, as the header says nothing else.
    try {
      decoded = base64_decode(credentials);
    } catch (...) {
      return std::nullopt;
    }
    const auto colon = decoded ? decoded->find(':') : std::string::npos;
    if (colon == std::string::npos) return std::nullopt;
    presented = std::string_view(*decoded).substr(colon + 1);
  } else {
    return std::nullopt;
  }
  try {
    return std::string(presented);
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace

AdminToken::AdminToken(std::string_view token) : configured_(!token.empty()) {
  if (configured_) digest_ = sha256(token);
}

bool AdminToken::accepts(std::string_view authorization) const noexcept {
  if (!configured_) return false;
  const std::optional<std::string> presented = presented_token(authorization);
  if (!presented) return false;
  const Digest d = sha256(*presented);
  return CRYPTO_memcmp(d.data(), digest_.data(), d.size()) == 0;
}

AdminTokens::AdminTokens(const std::vector<Named>& tokens) {
  for (const Named& t : tokens)
    if (!t.token.empty()) tokens_.push_back(Entry{{t.name, t.roles}, sha256(t.token)});
}

std::optional<AdminTokens::Caller> AdminTokens::match(std::string_view authorization) const {
  const std::optional<std::string> presented = presented_token(authorization);
  if (!presented) return std::nullopt;
  const Digest d = sha256(*presented);
  const Entry* found = nullptr;
  for (const Entry& t : tokens_) {
    const bool equal = CRYPTO_memcmp(d.data(), t.digest.data(), d.size()) == 0;
    if (equal && !found) found = &t;
  }
  if (!found) return std::nullopt;
  return found->caller;
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
  if (util::iequals(name, "localhost")) return true;
  auto v4 = urls::parse_ipv4_address(name);
  return v4 && v4->is_loopback();
}

bool is_own_origin(std::string_view origin, std::string_view host) noexcept {
  constexpr std::string_view kScheme = "http://";
  return !host.empty() && origin.size() == kScheme.size() + host.size() &&
         util::iequals(origin.substr(0, kScheme.size()), kScheme) &&
         util::iequals(origin.substr(kScheme.size()), host);
}

std::optional<Rejection> check_origin(std::span<const HeaderField> headers) {
  const std::size_t origins = count_headers(headers, "Origin");
  if (origins == 0) return std::nullopt;
  const std::optional<std::string> origin = find_header(headers, "Origin");
  const std::optional<std::string> host = find_header(headers, "Host");
  if (origins == 1 && host && count_headers(headers, "Host") == 1 && is_own_origin(*origin, *host))
    return std::nullopt;
  return Rejection{Problem::forbidden,
                   "requests from other web pages are refused: the Origin header must be this admin "
                   "listener's own (http:// and the Host header)"};
}

std::optional<Rejection> check_loopback_request(std::span<const HeaderField> headers) {
  for (const HeaderField& f : headers) {
    if (util::iequals(f.name, "host") && !f.value.empty() && !is_loopback_host(f.value))
      return Rejection{Problem::forbidden,
                       "the Host header must be localhost, 127.0.0.1 or [::1] (with any port); without "
                       "admin.token_env the admin listener serves programs on this machine only"};
  }
  return check_origin(headers);
}

std::optional<Rejection> check_json_request(std::span<const HeaderField> headers) {
  std::optional<std::string> type = find_header(headers, "Content-Type");
  if (type && has_media_type(*type, "application/json")) return std::nullopt;
  return Rejection{Problem::unsupported_media_type, "the control API takes Content-Type: application/json"};
}

}  // namespace idem::gateway
