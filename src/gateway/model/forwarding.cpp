#include "gateway/model/forwarding.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "util/ascii.h"

namespace idem::gateway {
namespace {

constexpr std::array<std::uint8_t, 12> kMappedPrefix = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool all_digits(std::string_view s) {
  return !s.empty() && s.size() <= 5 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// inet_pton wants a terminated string; an address is at most 45 characters.
std::optional<IpAddress> parse_exact(std::string_view text) noexcept {
  char buf[64];
  if (text.empty() || text.size() >= sizeof buf) return std::nullopt;
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  IpAddress a;
  if (text.find(':') == std::string_view::npos) {
    in_addr v4{};
    if (::inet_pton(AF_INET, buf, &v4) != 1) return std::nullopt;
    std::copy(kMappedPrefix.begin(), kMappedPrefix.end(), a.bytes.begin());
    std::memcpy(a.bytes.data() + 12, &v4, 4);
    a.v4 = true;
    return a;
  }
  in6_addr v6{};
  if (::inet_pton(AF_INET6, buf, &v6) != 1) return std::nullopt;
  std::memcpy(a.bytes.data(), &v6, 16);
  // An IPv4-mapped address is the IPv4 client of an IPv6 socket: the same client.
  a.v4 = std::equal(kMappedPrefix.begin(), kMappedPrefix.end(), a.bytes.begin());
  return a;
}

}  // namespace

std::optional<IpAddress> parse_ip(std::string_view text, bool lenient) noexcept {
  if (!lenient) return parse_exact(text);
  text = trim(text);
  if (text.starts_with('[')) {  // "[v6]" or "[v6]:port"
    const auto close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty() && !(rest.front() == ':' && all_digits(rest.substr(1)))) return std::nullopt;
    return parse_exact(text.substr(1, close - 1));
  }
  // "v4:port": one colon only (an IPv6 address has two or more).
  if (const auto colon = text.find(':');
      colon != std::string_view::npos && text.find(':', colon + 1) == std::string_view::npos) {
    if (!all_digits(text.substr(colon + 1))) return std::nullopt;
    return parse_exact(text.substr(0, colon));
  }
  return parse_exact(text);
}

std::string to_string(const IpAddress& a) {
  char buf[INET6_ADDRSTRLEN];
  if (a.v4) {
    in_addr v4{};
    std::memcpy(&v4, a.bytes.data() + 12, 4);
    return ::inet_ntop(AF_INET, &v4, buf, sizeof buf) ? std::string(buf) : std::string();
  }
  in6_addr v6{};
  std::memcpy(&v6, a.bytes.data(), 16);
  return ::inet_ntop(AF_INET6, &v6, buf, sizeof buf) ? std::string(buf) : std::string();
}

bool IpRange::contains(const IpAddress& a) const noexcept {
  const unsigned whole = prefix / 8, rest = prefix % 8;
  if (!std::equal(base.bytes.begin(), base.bytes.begin() + whole, a.bytes.begin())) return false;
  if (rest == 0) return true;
  const auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
  return (base.bytes[whole] & mask) == (a.bytes[whole] & mask);
}

Result<IpRange> parse_ip_range(std::string_view text) {
  const auto slash = text.find('/');
  const std::string_view address = text.substr(0, slash);
  auto a = parse_ip(address);
  if (!a) return invalid_argument("'" + std::string(address) + "' is not an IPv4 or IPv6 address");
  IpRange r{*a, 128};
  if (slash == std::string_view::npos) return r;
  const std::string_view digits = text.substr(slash + 1);
  unsigned bits = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), bits);
  const unsigned most = a->v4 ? 32 : 128;
  if (digits.empty() || digits.size() > 3 || ec != std::errc() || end != digits.data() + digits.size() ||
      bits > most)
    return invalid_argument("'" + std::string(text) + "': the prefix length must be a number from 0 to " +
                            std::to_string(most));
  r.prefix = a->v4 ? 96 + bits : bits;
  IpRange zeroed = r;
  for (unsigned i = r.prefix; i < 128; ++i)
    zeroed.base.bytes[i / 8] &= static_cast<std::uint8_t>(~(0x80u >> (i % 8)));
  if (zeroed.base != r.base)
    return invalid_argument("'" + std::string(text) + "' has address bits set past its /" +
                            std::to_string(bits) + " prefix (the range is " + to_string(zeroed.base) + "/" +
                            std::to_string(bits) + ")");
  return r;
}

bool TrustedProxies::contains(const IpAddress& a) const noexcept {
  return std::any_of(ranges_.begin(), ranges_.end(), [&](const IpRange& r) { return r.contains(a); });
}

bool TrustedProxies::contains(std::string_view address) const noexcept {
  if (ranges_.empty()) return false;
  auto a = parse_ip(address);
  return a && contains(*a);
}

std::string resolve_client(std::string_view peer, std::span<const std::string_view> xff,
                           const TrustedProxies& trusted) {
  if (!trusted.contains(peer)) return std::string(peer);
  std::optional<IpAddress> client;  // the last address the walk reached
  for (auto field = xff.rbegin(); field != xff.rend(); ++field) {
    std::string_view list = *field;
    while (!list.empty()) {
      const auto comma = list.rfind(',');
      const std::string_view entry = trim(comma == std::string_view::npos ? list : list.substr(comma + 1));
      list = comma == std::string_view::npos ? std::string_view{} : list.substr(0, comma);
      if (entry.empty()) continue;
      auto a = parse_ip(entry, true);
      if (!a) return client ? to_string(*client) : std::string(peer);
      client = a;
      if (!trusted.contains(*a)) return to_string(*a);
    }
  }
  return client ? to_string(*client) : std::string(peer);
}

ForwardingField forwarding_field(std::string_view name) noexcept {
  // Every name here starts with f, t or x: most fields are told apart by their first byte.
  if (name.empty()) return ForwardingField::none;
  const char c = util::ascii_lower(name[0]);
  if (c != 'f' && c != 'x' && c != 't') return ForwardingField::none;
  if (util::iequals(name, "x-forwarded-for")) return ForwardingField::forwarded_for;
  if (util::iequals(name, "x-forwarded-proto")) return ForwardingField::forwarded_proto;
  if (util::iequals(name, "forwarded")) return ForwardingField::forwarded;
  for (std::string_view n : kOtherForwardingFields)
    if (util::iequals(n, name)) return ForwardingField::other;
  return ForwardingField::none;
}

std::string forwarded_element(std::string_view peer) {
  const auto a = parse_ip(peer);
  if (!a) return "for=unknown;proto=http";
  if (a->v4) return "for=" + to_string(*a) + ";proto=http";
  return "for=\"[" + to_string(*a) + "]\";proto=http";
}

namespace {
constexpr std::string_view kHopProto = ";proto=http";
}  // namespace

std::string forwarded_value_over_tls(std::string_view value) {
  std::string out(value);
  if (out.ends_with(kHopProto)) out += 's';
  return out;
}

void forwarded_over_tls(std::string& head, bool proxy_proto) {
  constexpr std::string_view kProto = "\r\nX-Forwarded-Proto: http\r\n";
  if (const auto at = head.find(kProto); !proxy_proto && at != std::string::npos)
    head.insert(at + kProto.size() - 2, 1, 's');
  // The Forwarded field's line ends with this hop's element.
  const auto field = head.find("\r\nForwarded: ");
  if (field == std::string::npos) return;
  const auto eol = head.find("\r\n", field + 2);
  if (eol != std::string::npos && std::string_view(head).substr(0, eol).ends_with(kHopProto))
    head.insert(eol, 1, 's');
}

}  // namespace idem::gateway
