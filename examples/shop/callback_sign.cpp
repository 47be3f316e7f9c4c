#include "callback_sign.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace shop {

std::string callback_signature(std::string_view secret, std::string_view signed_fields) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(signed_fields.data()), signed_fields.size(), mac, &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * len);
  for (unsigned i = 0; i < len; ++i) {
    hex += kHex[mac[i] >> 4];
    hex += kHex[mac[i] & 15];
  }
  return hex;
}

bool callback_signature_ok(std::string_view secret, std::string_view signed_fields, std::string_view sign) {
  const std::string hex = callback_signature(secret, signed_fields);
  return sign.size() == hex.size() && CRYPTO_memcmp(sign.data(), hex.data(), hex.size()) == 0;
}

}  // namespace shop
