#include "gateway/model/stored_result.h"

#include "gateway/model/hop_by_hop.h"
#include "util/ascii.h"

namespace idem::gateway {
namespace {

// Layout: kind byte, then for a response: u16 status, u32 header count, each header as
// u32-length-prefixed name and value, then the u32-length-prefixed body; for not_stored:
// u16 status; for json: the u32-length-prefixed text; for uncertain: the mark's text
// (engine/uncertain_mark.h, "fence=…;instance=…;at=…"), empty in records of earlier
// releases and in the marker the claim runner is given. Little-endian.

constexpr char kUncertain[] = {static_cast<char>(StoredResult::Kind::uncertain), '\0'};

void put_u16(std::string& out, unsigned v) {
  out.push_back(static_cast<char>(v & 0xff));
  out.push_back(static_cast<char>((v >> 8) & 0xff));
}
void put_u32(std::string& out, std::size_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_bytes(std::string& out, std::string_view s) {
  put_u32(out, s.size());
  out.append(s);
}

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool u8(std::uint8_t& v) {
    if (in_.empty()) return false;
    v = static_cast<std::uint8_t>(in_[0]);
    in_.remove_prefix(1);
    return true;
  }
  bool u16(unsigned& v) {
    if (in_.size() < 2) return false;
    v = static_cast<unsigned char>(in_[0]) | (static_cast<unsigned char>(in_[1]) << 8);
    in_.remove_prefix(2);
    return true;
  }
  bool u32(std::size_t& v) {
    if (in_.size() < 4) return false;
    v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<std::size_t>(static_cast<unsigned char>(in_[i])) << (8 * i);
    in_.remove_prefix(4);
    return true;
  }
  bool bytes(std::string& out) {
    std::size_t n = 0;
    if (!u32(n) || n > in_.size()) return false;
    out.assign(in_.substr(0, n));
    in_.remove_prefix(n);
    return true;
  }
  bool done() const { return in_.empty(); }
  std::size_t left() const { return in_.size(); }

 private:
  std::string_view in_;
};

}  // namespace

std::string encode(const StoredResult& r) {
  std::string out;
  out.push_back(static_cast<char>(r.kind));
  switch (r.kind) {
    case StoredResult::Kind::response:
      out.reserve(r.response.body.size() + 64);
      put_u16(out, r.response.status);
      put_u32(out, r.response.headers.size());
      for (const auto& [name, value] : r.response.headers) {
        put_bytes(out, name);
        put_bytes(out, value);
      }
      put_bytes(out, r.response.body);
      break;
    case StoredResult::Kind::not_stored:
      put_u16(out, r.response.status);
      break;
    case StoredResult::Kind::json:
      put_bytes(out, r.json);
      break;
    case StoredResult::Kind::uncertain:
      if (r.mark.fence != 0) out = uncertain_result(kUncertain, r.mark);
      break;
  }
  return out;
}

std::string encode_response(unsigned status,
                            std::span<const std::pair<std::string_view, std::string_view>> fields,
                            std::string_view body) {
  std::size_t kept = 0, size = 1 + 2 + 4 + 4 + body.size();
  for (const auto& [name, value] : fields)
    if (!is_unstorable_header(name)) {
      ++kept;
      size += 8 + name.size() + value.size();
    }
  std::string out;
  out.reserve(size);
  out.push_back(static_cast<char>(StoredResult::Kind::response));
  put_u16(out, status);
  put_u32(out, kept);
  for (const auto& [name, value] : fields)
    if (!is_unstorable_header(name)) {
      put_bytes(out, name);
      put_bytes(out, value);
    }
  put_bytes(out, body);
  return out;
}

Result<StoredResult> decode_stored_result(std::string_view bytes) {
  const auto bad = [](const char* why) { return invalid_argument(std::string("stored result: ") + why); };
  Reader in(bytes);
  std::uint8_t kind = 0;
  if (!in.u8(kind)) return bad("empty");
  StoredResult r;
  r.kind = static_cast<StoredResult::Kind>(kind);
  switch (r.kind) {
    case StoredResult::Kind::response: {
      std::size_t n = 0;
      if (!in.u16(r.response.status) || !in.u32(n)) return bad("truncated response");
      // Each header takes at least 8 bytes: a count beyond that is corrupt, not a reason to allocate.
      if (n > in.left() / 8) return bad("header count larger than the data");
      r.response.headers.resize(n);
      for (auto& [name, value] : r.response.headers) {
        if (!in.bytes(name) || !in.bytes(value)) return bad("truncated header");
      }
      if (!in.bytes(r.response.body)) return bad("truncated body");
      break;
    }
    case StoredResult::Kind::not_stored:
      if (!in.u16(r.response.status)) return bad("truncated status");
      break;
    case StoredResult::Kind::json:
      if (!in.bytes(r.json)) return bad("truncated json");
      break;
    case StoredResult::Kind::uncertain:
      // The rest is the mark, in its one form (so that whatever decodes re-encodes alike).
      if (bytes.size() > 1) {
        r.mark = read_uncertain(bytes, kUncertain).value_or(UncertainMark{});
        if (r.mark.fence == 0 || uncertain_result(kUncertain, r.mark) != bytes)
          return bad("malformed uncertain mark");
      }
      return r;
    default:
      return bad("unknown kind");
  }
  if (!in.done()) return bad("trailing bytes");
  return r;
}

bool is_unstorable_header(std::string_view name) noexcept {
  return is_hop_by_hop(name) || util::iequals(name, "content-length") || util::iequals(name, "set-cookie");
}

}  // namespace idem::gateway
