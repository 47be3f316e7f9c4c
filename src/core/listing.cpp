#include "core/listing.h"

#include <tuple>

#include "util/hex.h"

namespace idem::core {
namespace {

void put_be(std::string& out, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint64_t get_be(std::string_view in, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(in[static_cast<std::size_t>(i)]);
  return v;
}

Status bad_cursor() { return invalid_argument("cursor: not a cursor this store handed out"); }

}  // namespace

Status validate(const ListArgs& a) {
  if (a.limit < 1 || a.limit > kMaxListLimit)
    return invalid_argument("limit must be from 1 to " + std::to_string(kMaxListLimit));
  return Status::ok();
}

bool matches(const Record& r, const ListArgs& a) {
  return (!a.scope || r.scope == *a.scope) && r.key.starts_with(a.key_prefix) &&
         (!a.state || r.state == *a.state);
}

bool shown_before(const Record& a, const Record& b) {
  if (a.expires_at != b.expires_at) return a.expires_at > b.expires_at;
  return std::tie(a.scope, a.key) < std::tie(b.scope, b.key);
}

bool after(const Record& r, const ListPosition& p) {
  if (r.expires_at != p.expires_at) return r.expires_at < p.expires_at;
  return std::tie(r.scope, r.key) > std::tie(p.scope, p.key);
}

// "k" and the hex of: expires_at (µs, 8 bytes big-endian), the scope's length (4 bytes),
// the scope, the key.
std::string encode_position(const Record& last) {
  std::string raw;
  put_be(raw, static_cast<std::uint64_t>(to_micros(last.expires_at)), 8);
  put_be(raw, last.scope.size(), 4);
  raw.append(last.scope).append(last.key);
  std::string out = "k";
  out.reserve(1 + 2 * raw.size());
  util::append_hex(out, raw);
  return out;
}

Result<std::optional<ListPosition>> decode_position(std::string_view cursor) {
  if (cursor.empty()) return std::optional<ListPosition>();
  if (cursor[0] != 'k' || cursor.size() % 2 != 1) return bad_cursor();
  std::string raw;
  raw.reserve(cursor.size() / 2);
  for (std::size_t i = 1; i < cursor.size(); i += 2) {
    // Lowercase only, as encode_position writes it: another spelling was not handed out.
    const int hi = util::lower_hex_value(cursor[i]), lo = util::lower_hex_value(cursor[i + 1]);
    if (hi < 0 || lo < 0) return bad_cursor();
    raw.push_back(static_cast<char>(hi * 16 + lo));
  }
  if (raw.size() < 12) return bad_cursor();
  const std::string_view v(raw);
  const auto scope_size = static_cast<std::size_t>(get_be(v.substr(8), 4));
  if (scope_size > raw.size() - 12) return bad_cursor();
  ListPosition p{from_micros(static_cast<std::int64_t>(get_be(v, 8))), std::string(v.substr(12, scope_size)),
                 std::string(v.substr(12 + scope_size))};
  if (p.key.empty()) return bad_cursor();
  return std::optional<ListPosition>(std::move(p));
}

ListPage make_page(std::vector<Record> rows, std::size_t limit) {
  ListPage page;
  if (rows.size() > limit) {
    rows.resize(limit);
    page.next_cursor = encode_position(rows.back());
  }
  page.records = std::move(rows);
  return page;
}

std::optional<std::string> prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) != 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::nullopt;
}

}  // namespace idem::core
