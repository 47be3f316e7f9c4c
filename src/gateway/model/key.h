// Idempotency keys as clients send them (docs/http.md, "What to send"). Pure; safe for concurrent use.
// The gateway's, not part of the installed library's contract (include/idem/).
#pragma once

#include <string>
#include <string_view>

#include "idem/status.h"

namespace idem {

inline constexpr std::size_t kMaxKeyLength = 255;

// True when `key` is 1–255 visible ASCII characters (0x21–0x7E).
bool is_valid_key(std::string_view key) noexcept;

// The key carried by an Idempotency-Key header value, which must be exactly one Structured
// Field Item (RFC 8941 §3.3; the IETF draft's Idempotency-Key): either a plain key (`abc`,
// an sf-token but for its alphabet: any visible ASCII) or an sf-string (`"abc"`, with `\"`
// and `\\` escapes, which may hold any printable ASCII, ',' included), surrounded by
// optional whitespace. invalid_argument (naming the reason) when the value is malformed,
// is a list (a ',' outside a string: `a,b`, `"a", "b"`), has parameters (`abc;p=1`,
// `"abc";p=1`), or the key it carries is not valid by is_valid_key.
Result<std::string> parse_key_header(std::string_view value);

}  // namespace idem
