// What the gateway keeps as a record's result (docs/http.md, docs/admin.md): the upstream's response
// for replay, or a marker — outcome uncertain, response not stored (over max_result) — or
// a JSON value committed through the control API. One codec, so every reader (the replay
// path, the admin records endpoint, `idem record get`) agrees on the bytes.
// Pure; safe for concurrent use.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/uncertain_mark.h"
#include "idem/status.h"

namespace idem::gateway {

struct StoredResponse {
  unsigned status = 200;
  // End-to-end headers only, in order; never hop-by-hop ones, Set-Cookie or framing.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  friend bool operator==(const StoredResponse&, const StoredResponse&) = default;
};

struct StoredResult {
  enum class Kind : std::uint8_t {
    response = 'R',    // replay `response`
    uncertain = 'U',   // the first request's outcome is unknown: 409 outcome-uncertain
    not_stored = 'N',  // the response was too large to keep: 409 result-not-stored
    json = 'J',        // written through the control API: `json` holds the JSON text
  };
  Kind kind = Kind::response;
  StoredResponse response;  // response; for not_stored only `status` is set
  std::string json;         // json
  // uncertain: the attempt the service may have received, who marked it and when
  // (engine/uncertain_mark.h); fence 0 for a record of an earlier release.
  UncertainMark mark;

  friend bool operator==(const StoredResult&, const StoredResult&) = default;
};

std::string encode(const StoredResult& r);

// encode() of a StoredResult of kind response, read from a response held elsewhere (the
// upstream's) without copying it into one first; unstorable fields are left out
// (is_unstorable_header).
std::string encode_response(unsigned status,
                            std::span<const std::pair<std::string_view, std::string_view>> fields,
                            std::string_view body);

// invalid_argument when `bytes` is not something encode() produced (truncated, unknown
// kind, trailing bytes). Never reads out of bounds, whatever the input.
Result<StoredResult> decode_stored_result(std::string_view bytes);

// True for headers a replay must not carry: hop-by-hop (RFC 9110 §7.6.1: Connection,
// Keep-Alive, Proxy-Connection, TE, Trailer, Transfer-Encoding, Upgrade, Proxy-Authenticate,
// Proxy-Authorization), framing (Content-Length), and Set-Cookie. Case-insensitive.
bool is_unstorable_header(std::string_view name) noexcept;

}  // namespace idem::gateway
