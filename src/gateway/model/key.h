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

// The key carried by an Idempotency-Key header value: either a plain token (`abc`) or a
// Structured Field string (`"abc"`, with `\"` and `\\` escapes), surrounded by optional
// whitespace. invalid_argument (naming the reason) when the value is malformed or the key
// it carries is not valid by is_valid_key.
Result<std::string> parse_key_header(std::string_view value);

}  // namespace idem
