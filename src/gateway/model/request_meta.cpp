#include "gateway/model/request_meta.h"

#include <algorithm>
#include <cstdint>
#include <random>

#include "gateway/model/key_template.h"

namespace idem::gateway {
namespace {

// The length of the valid UTF-8 sequence at the start of `s` (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), or 0 when it is not one.
std::size_t utf8_sequence(std::string_view s) noexcept {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = byte(0);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (s.size() < n || byte(1) < lo || byte(1) > hi) return 0;
  for (std::size_t i = 2; i < n; ++i)
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  return n;
}

std::mt19937_64& generator() {
  thread_local std::mt19937_64 gen = [] {
    std::random_device rd;
    std::seed_seq seed{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seed);
  }();
  return gen;
}

}  // namespace

bool is_sane_request_id(std::string_view id) noexcept {
  if (id.empty() || id.size() > kMaxRequestIdLength) return false;
  return std::all_of(id.begin(), id.end(), [](char c) { return c >= 0x21 && c <= 0x7E; });
}

RequestId RequestId::from_client(std::string_view id) noexcept {
  if (!is_sane_request_id(id)) return generate();
  RequestId r;
  std::copy(id.begin(), id.end(), r.chars_.begin());
  r.size_ = id.size();
  return r;
}

RequestId RequestId::generate() noexcept {
  static constexpr char kHex[] = "0123456789abcdef";
  RequestId r;
  auto& gen = generator();
  // A UUID version 4 (RFC 9562 §5.4): 122 random bits, the version nibble 4 and the
  // variant bits 10, written 8-4-4-4-12 in lowercase hex.
  std::uint64_t halves[2] = {gen(), gen()};
  halves[0] = (halves[0] & ~std::uint64_t{0xF000}) | 0x4000;
  halves[1] = (halves[1] & ~(std::uint64_t{0x3} << 62)) | (std::uint64_t{0x2} << 62);
  std::size_t n = 0;
  for (std::size_t half = 0; half < 2; ++half) {
    for (int shift = 60; shift >= 0; shift -= 4) {
      if (n == 8 || n == 13 || n == 18 || n == 23) r.chars_[n++] = '-';
      r.chars_[n++] = kHex[(halves[half] >> shift) & 0xF];
    }
  }
  r.size_ = n;
  r.generated_ = true;
  return r;
}

bool is_uuid(std::string_view id) noexcept {
  if (id.size() != 36) return false;
  for (std::size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

std::string problem_instance(std::string_view request_id) {
  if (is_uuid(request_id)) return "urn:uuid:" + std::string(request_id);
  // Percent-encoded beyond RFC 3986's unreserved set: the text after the prefix decodes to
  // the log's request_id.
  std::string out = "urn:idem:request:";
  percent_encode(request_id, out);
  return out;
}

RequestId choose_request_id(std::span<const std::string_view> values) noexcept {
  if (values.size() == 1) return RequestId::from_client(values[0]);
  return RequestId::generate();
}

std::string forwarded_for(std::span<const std::string_view> existing, std::string_view client) {
  std::size_t size = client.size();
  for (std::string_view v : existing) size += v.size() + 2;
  std::string out;
  out.reserve(size);
  for (std::string_view v : existing) {
    if (v.empty()) continue;
    out.append(v).append(", ");
  }
  out.append(client);
  return out;
}

void append_json_string(std::string& out, std::string_view text, std::size_t max_bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  // The common case first: printable ASCII that needs no escape goes in one piece.
  const std::size_t limit = std::min(text.size(), max_bytes);
  std::size_t i = 0;
  while (i < limit) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c >= 0x7F || c == '"' || c == '\\') break;
    ++i;
  }
  out.append(text.data(), i);
  bool cut = false;
  while (i < text.size()) {
    const std::string_view rest = text.substr(i);
    const std::size_t n = utf8_sequence(rest);
    if (i + std::max<std::size_t>(n, 1) > max_bytes) {
      cut = true;
      break;
    }
    if (n == 0) {
      out.append("\\ufffd");
      i += 1;
      continue;
    }
    if (n > 1) {
      out.append(rest.substr(0, n));
      i += n;
      continue;
    }
    const char c = rest[0];
    ++i;
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
          const char esc[] = {'\\', 'u', '0', '0', kHex[(c >> 4) & 0xF], kHex[c & 0xF]};
          out.append(esc, sizeof esc);
        } else {
          out.push_back(c);
        }
    }
  }
  if (cut) out.append("...");
  out.push_back('"');
}

}  // namespace idem::gateway
