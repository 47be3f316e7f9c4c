// The payment platform's signature on a callback (README.md, POST /pay/callback): lowercase
// hex HMAC-SHA256 over the signed fields. Shared by the shop, which verifies it, and the
// storm, which plays the platform and signs.
#pragma once

#include <string>
#include <string_view>

namespace shop {

std::string callback_signature(std::string_view secret, std::string_view signed_fields);

}  // namespace shop
