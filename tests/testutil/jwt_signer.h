// Keys and JSON Web Tokens made at test time with OpenSSL, for the tests of `jwt`
// (docs/configuration.md, "Principals from a JWT"): an HS256 secret, an RSA 2048 and an
// EC P-256 key pair, their public keys as PEM files and as a JWK Set, and tokens signed
// with any of them (or forged). No network, nothing checked in.
#pragma once

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

namespace idem::testutil {

inline std::string base64url(std::string_view in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : in) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 63]);
  return out;
}

// A key pair (RSA or EC P-256) generated now; owned.
class TestKeyPair {
 public:
  static TestKeyPair rsa() {
    return TestKeyPair(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", std::size_t{2048}));
  }
  static TestKeyPair ec() { return TestKeyPair(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256")); }
  TestKeyPair(TestKeyPair&& o) noexcept : pkey_(o.pkey_) { o.pkey_ = nullptr; }
  TestKeyPair(const TestKeyPair&) = delete;
  ~TestKeyPair() { EVP_PKEY_free(pkey_); }

  EVP_PKEY* get() const { return pkey_; }
  bool is_rsa() const { return EVP_PKEY_is_a(pkey_, "RSA"); }

  std::string public_pem() const {
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PUBKEY(bio, pkey_);
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    std::string pem(data, static_cast<std::size_t>(n));
    BIO_free(bio);
    return pem;
  }
  std::string private_pem() const {
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(bio, pkey_, nullptr, nullptr, 0, nullptr, nullptr);
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    std::string pem(data, static_cast<std::size_t>(n));
    BIO_free(bio);
    return pem;
  }

  // The public key as one JWK, with `kid`.
  std::string jwk(std::string_view kid) const {
    if (is_rsa()) {
      return R"({"kty":"RSA","kid":")" + std::string(kid) + R"(","use":"sig","n":")" + bn("n") +
             R"(","e":")" + bn("e") + R"("})";
    }
    unsigned char point[65];
    std::size_t len = 0;
    EVP_PKEY_get_octet_string_param(pkey_, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point, &len);
    const std::string p(reinterpret_cast<char*>(point), len);
    return R"({"kty":"EC","kid":")" + std::string(kid) + R"(","crv":"P-256","x":")" +
           base64url(p.substr(1, 32)) + R"(","y":")" + base64url(p.substr(33, 32)) + R"("})";
  }

  // The JWS signature of `input`: RSA PKCS#1 v1.5 or ECDSA as JOSE's R || S.
  std::string sign(std::string_view input) const {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    std::size_t len = 0;
    EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, pkey_);
    EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(input.data()), input.size());
    std::string sig(len, '\0');
    EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                   reinterpret_cast<const unsigned char*>(input.data()), input.size());
    EVP_MD_CTX_free(ctx);
    sig.resize(len);
    if (is_rsa()) return sig;
    const unsigned char* p = reinterpret_cast<const unsigned char*>(sig.data());
    ECDSA_SIG* ecdsa = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
    std::string rs(64, '\0');
    BN_bn2binpad(ECDSA_SIG_get0_r(ecdsa), reinterpret_cast<unsigned char*>(rs.data()), 32);
    BN_bn2binpad(ECDSA_SIG_get0_s(ecdsa), reinterpret_cast<unsigned char*>(rs.data()) + 32, 32);
    ECDSA_SIG_free(ecdsa);
    return rs;
  }

 private:
  explicit TestKeyPair(EVP_PKEY* pkey) : pkey_(pkey) {
    if (pkey_ == nullptr) throw std::runtime_error("key generation failed");
  }
  std::string bn(const char* name) const {
    BIGNUM* b = nullptr;
    EVP_PKEY_get_bn_param(pkey_, name, &b);
    std::string out(static_cast<std::size_t>(BN_num_bytes(b)), '\0');
    BN_bn2bin(b, reinterpret_cast<unsigned char*>(out.data()));
    BN_free(b);
    return base64url(out);
  }
  EVP_PKEY* pkey_;
};

inline std::string hmac_sha256(std::string_view secret, std::string_view input) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac, &size);
  return std::string(reinterpret_cast<char*>(mac), size);
}

// header.payload.signature, the signature over the first two parts by `key` (HS256 when
// `key` is null, with `secret`).
inline std::string jwt(std::string_view header_json, std::string_view payload_json, const TestKeyPair* key,
                       std::string_view secret = "") {
  const std::string input = base64url(header_json) + "." + base64url(payload_json);
  return input + "." + base64url(key ? key->sign(input) : hmac_sha256(secret, input));
}

inline void write_file(const std::string& path, std::string_view text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace idem::testutil
