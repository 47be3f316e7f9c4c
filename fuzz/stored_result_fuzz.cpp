// The stored-result codec (gateway/model/stored_result.h), a persisted format: records written by
// one version of idem are read by the next, by the admin endpoint and by `idem record get`.
// On arbitrary bytes:
//   - decode_stored_result never crashes, never reads out of bounds, never throws
//   - whatever decodes re-encodes to the very same bytes (the layout has one encoding per
//     value: fixed-width little-endian numbers, no padding, trailing bytes refused) and
//     decodes again to an equal value
// On a value built from the input (each kind with the fields that kind keeps):
//   - encode() gives bytes that decode back to an equal value
// And is_unstorable_header does not depend on the case of the name.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <fuzzer/FuzzedDataProvider.h>

#include "fuzz/fuzz_check.h"
#include "gateway/model/stored_result.h"

namespace {

using idem::fuzz::check;
using idem::gateway::decode_stored_result;
using idem::gateway::StoredResult;

// Printable bytes of a value, for the report of a broken invariant.
std::string show(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes.substr(0, 256)) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

void check_round_trip(const StoredResult& value, const char* what) {
  const std::string bytes = idem::gateway::encode(value);
  auto again = decode_stored_result(bytes);
  check(again.is_ok(), what, again.is_ok() ? show(bytes) : again.status().to_string() + " " + show(bytes));
  check(*again == value, what, show(bytes));
  check(idem::gateway::encode(*again) == bytes, what, show(bytes));
}

// A value of a kind chosen by the input, holding only what encode() keeps for that kind.
// Statuses span the format's 16 bits (an HTTP status has three digits).
StoredResult value_from(FuzzedDataProvider& in) {
  StoredResult r;
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0: {
      r.kind = StoredResult::Kind::response;
      r.response.status = in.ConsumeIntegralInRange<unsigned>(0, 0xffff);
      const int n = in.ConsumeIntegralInRange(0, 12);
      for (int i = 0; i < n; ++i) {
        std::string name = in.ConsumeRandomLengthString(32);
        std::string value = in.ConsumeRandomLengthString(128);
        r.response.headers.emplace_back(std::move(name), std::move(value));
      }
      r.response.body = in.ConsumeRemainingBytesAsString();
      break;
    }
    case 1:
      r.kind = StoredResult::Kind::uncertain;
      // A mark names a fence; a record of an earlier release holds none.
      r.mark.fence = in.ConsumeIntegral<std::uint64_t>();
      if (r.mark.fence != 0) {
        r.mark.instance = in.ConsumeRandomLengthString(64);
        r.mark.instance.erase(std::min(r.mark.instance.find(';'), r.mark.instance.size()));
        r.mark.at_ms = in.ConsumeIntegral<std::int64_t>();
      }
      break;
    case 2:
      r.kind = StoredResult::Kind::not_stored;
      r.response.status = in.ConsumeIntegralInRange<unsigned>(0, 0xffff);
      break;
    default:
      r.kind = StoredResult::Kind::json;
      r.json = in.ConsumeRemainingBytesAsString();
  }
  return r;
}

void check_header_case(std::string_view name) {
  std::string upper(name), lower(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const bool u = idem::gateway::is_unstorable_header(upper);
  check(u == idem::gateway::is_unstorable_header(lower) && u == idem::gateway::is_unstorable_header(name),
        "is_unstorable_header depends on case", show(name));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);

  auto decoded = decode_stored_result(bytes);
  if (decoded) {
    check(idem::gateway::encode(*decoded) == bytes, "a decoded value re-encodes to other bytes", show(bytes));
    check_round_trip(*decoded, "a decoded value does not round-trip");
    if (decoded->kind == StoredResult::Kind::response) {
      for (const auto& [name, value] : decoded->response.headers) check_header_case(name);
    }
  }

  FuzzedDataProvider in(data, size);
  check_round_trip(value_from(in), "an encoded value does not decode back equal");
  return 0;
}
