// The payment platforms' signature (README.md, POST /pay/callback and POST /pay/notify):
// lowercase hex HMAC-SHA256 over the signed fields or body. Shared by the shop, which
// verifies it, and the storm, which plays the platforms and signs.
#pragma once

#include <string>
#include <string_view>

namespace shop {

std::string callback_signature(std::string_view secret, std::string_view signed_fields);

// True when `sign` is callback_signature(secret, signed_fields); compared in constant time.
bool callback_signature_ok(std::string_view secret, std::string_view signed_fields, std::string_view sign);

}  // namespace shop
