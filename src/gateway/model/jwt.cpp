#include "gateway/model/jwt.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "gateway/model/request_reading.h"
#include "util/ascii.h"

namespace idem::gateway {

struct JwtVerifier::Key {
  JwtAlgorithm algorithm;  // the one algorithm this key verifies
  std::string kid;         // "" when the key has none
  std::string secret;      // hs256
  EVP_PKEY* pkey = nullptr;

  Key(JwtAlgorithm a, std::string k) : algorithm(a), kid(std::move(k)) {}
  Key(const Key&) = delete;
  Key& operator=(const Key&) = delete;
  ~Key() { EVP_PKEY_free(pkey); }
};

namespace {

constexpr std::size_t kMaxToken = 8192;
constexpr std::size_t kMaxClaim = 1024;
constexpr std::size_t kMinSecret = 32;  // RFC 7518 §3.2: at least the hash's 256 bits
constexpr int kMinRsaBits = 2048;

using KeyPtr = std::shared_ptr<JwtVerifier::Key>;

Rejection invalid(std::string why) { return {Problem::credentials_invalid, "the JWT " + std::move(why)}; }

// RFC 4648 §5 without padding, strictly: only the 64 characters, no length that leaves a
// lone character, and the spare bits of the last character zero, so one text is one value.
std::optional<std::string> base64url_decode(std::string_view in) {
  if (in.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(in.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v = c >= 'A' && c <= 'Z'   ? c - 'A'
            : c >= 'a' && c <= 'z' ? c - 'a' + 26
            : c >= '0' && c <= '9' ? c - '0' + 52
            : c == '-'             ? 62
            : c == '_'             ? 63
                                   : -1;
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  if ((acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

const unsigned char* bytes(std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); }

std::optional<boost::json::object> json_object(std::string_view text) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  return std::move(v.as_object());
}

// A NumericDate (RFC 7519 §2): seconds, possibly fractional; nullopt when not a number.
std::optional<double> number_member(const boost::json::object& o, std::string_view name) {
  const boost::json::value* v = o.if_contains(name);
  if (v == nullptr) return std::nullopt;
  if (v->is_int64()) return static_cast<double>(v->as_int64());
  if (v->is_uint64()) return static_cast<double>(v->as_uint64());
  if (v->is_double()) return v->as_double();
  return std::nullopt;
}

// A key file: a regular file of at most 1 MiB (never a device or a pipe that would not end).
std::string read_file(const std::string& path, const char* what) {
  std::error_code ec;
  const bool regular = std::filesystem::is_regular_file(path, ec);
  if (regular && std::filesystem::file_size(path, ec) > (1u << 20))
    throw std::runtime_error(std::string(what) + " '" + path + "' is larger than 1 MiB");
  std::ifstream in(path, std::ios::binary);
  if (!regular || !in) throw std::runtime_error("cannot read " + std::string(what) + " '" + path + "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// An RSA or P-256 public key's algorithm; throws for any other key.
JwtAlgorithm algorithm_of(EVP_PKEY* pkey, const std::string& where) {
  if (EVP_PKEY_is_a(pkey, "RSA")) {
    if (EVP_PKEY_get_bits(pkey) < kMinRsaBits)
      throw std::runtime_error(where + ": an RSA key of " + std::to_string(EVP_PKEY_get_bits(pkey)) +
                               " bits; RS256 needs at least 2048");
    return JwtAlgorithm::rs256;
  }
  if (EVP_PKEY_is_a(pkey, "EC")) {
    char group[64] = {};
    std::size_t len = 0;
    if (EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, &len) != 1 ||
        std::string_view(group) != "prime256v1")
      throw std::runtime_error(where + ": an EC key on another curve than P-256 (ES256)");
    return JwtAlgorithm::es256;
  }
  throw std::runtime_error(where + ": neither an RSA nor an EC P-256 public key");
}

KeyPtr secret_key(std::string secret, std::string kid, const std::string& where) {
  if (secret.size() < kMinSecret)
    throw std::runtime_error(where + ": an HS256 secret of " + std::to_string(secret.size()) +
                             " bytes; at least 32 are needed (RFC 7518, 3.2)");
  auto key = std::make_shared<JwtVerifier::Key>(JwtAlgorithm::hs256, std::move(kid));
  key->secret = std::move(secret);
  return key;
}

KeyPtr pem_or_secret(const std::string& path) {
  std::string text = read_file(path, "key_file");
  if (text.find("-----BEGIN") == std::string::npos) {
    if (text.ends_with("\r\n"))
      text.resize(text.size() - 2);
    else if (text.ends_with("\n"))
      text.pop_back();
    return secret_key(std::move(text), "", "key_file '" + path + "'");
  }
  if (text.find("PRIVATE KEY-----") != std::string::npos)
    throw std::runtime_error("key_file '" + path +
                             "' holds a private key: give the public key (openssl pkey -pubout)");
  BIO* bio = BIO_new_mem_buf(text.data(), static_cast<int>(text.size()));
  EVP_PKEY* pkey = bio ? PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr) : nullptr;
  BIO_free(bio);
  if (pkey == nullptr)
    throw std::runtime_error("key_file '" + path + "' holds no PEM public key (BEGIN PUBLIC KEY)");
  try {
    auto key = std::make_shared<JwtVerifier::Key>(algorithm_of(pkey, "key_file '" + path + "'"), "");
    key->pkey = pkey;
    return key;
  } catch (...) {
    EVP_PKEY_free(pkey);
    throw;
  }
}

// A JWK's public key from its parameters (OpenSSL 3's EVP_PKEY_fromdata).
EVP_PKEY* pkey_from(const char* type, OSSL_PARAM_BLD* bld) {
  OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld);
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr);
  EVP_PKEY* pkey = nullptr;
  if (params && ctx && EVP_PKEY_fromdata_init(ctx) == 1)
    EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params);
  EVP_PKEY_CTX_free(ctx);
  OSSL_PARAM_free(params);
  return pkey;
}

KeyPtr jwk_key(const boost::json::object& jwk, const std::string& where) {
  auto member = [&](std::string_view name) -> std::string {
    const boost::json::value* v = jwk.if_contains(name);
    if (v == nullptr || !v->is_string())
      throw std::runtime_error(where + ": no string `" + std::string(name) + "`");
    return std::string(v->as_string());
  };
  auto decoded = [&](std::string_view name) {
    std::optional<std::string> b = base64url_decode(member(name));
    if (!b || b->empty()) throw std::runtime_error(where + ": `" + std::string(name) + "` is not base64url");
    return *b;
  };
  const std::string kty = member("kty");
  const std::string kid = jwk.contains("kid") ? member("kid") : "";
  if (kty == "oct") return secret_key(decoded("k"), kid, where);
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  if (bld == nullptr) throw std::bad_alloc();
  EVP_PKEY* pkey = nullptr;
  BIGNUM* n = nullptr;
  BIGNUM* e = nullptr;
  try {
    if (kty == "RSA") {
      const std::string nb = decoded("n"), eb = decoded("e");
      n = BN_bin2bn(bytes(nb), static_cast<int>(nb.size()), nullptr);
      e = BN_bin2bn(bytes(eb), static_cast<int>(eb.size()), nullptr);
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n);
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e);
      pkey = pkey_from("RSA", bld);
    } else if (kty == "EC") {
      if (member("crv") != "P-256") throw std::runtime_error(where + ": only crv P-256 (ES256) is supported");
      const std::string x = decoded("x"), y = decoded("y");
      if (x.size() != 32 || y.size() != 32)
        throw std::runtime_error(where + ": x and y must be 32 bytes each");
      const std::string point = "\x04" + x + y;
      OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0);
      OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size());
      pkey = pkey_from("EC", bld);
    }
  } catch (...) {
    BN_free(n);
    BN_free(e);
    OSSL_PARAM_BLD_free(bld);
    throw;
  }
  BN_free(n);
  BN_free(e);
  OSSL_PARAM_BLD_free(bld);
  if (pkey == nullptr) throw std::runtime_error(where + ": not a valid " + kty + " public key");
  try {
    auto key = std::make_shared<JwtVerifier::Key>(algorithm_of(pkey, where), kid);
    key->pkey = pkey;
    return key;
  } catch (...) {
    EVP_PKEY_free(pkey);
    throw;
  }
}

std::vector<KeyPtr> jwks(const std::string& path) {
  const std::string where = "jwks_file '" + path + "'";
  std::optional<boost::json::object> set = json_object(read_file(path, "jwks_file"));
  const boost::json::value* keys = set ? set->if_contains("keys") : nullptr;
  if (keys == nullptr || !keys->is_array())
    throw std::runtime_error(where + " is not a JWK Set ({\"keys\": [...]})");
  std::vector<KeyPtr> out;
  std::size_t i = 0;
  for (const boost::json::value& k : keys->as_array()) {
    const std::string at = where + ": keys[" + std::to_string(i++) + "]";
    if (!k.is_object()) throw std::runtime_error(at + " is not an object");
    const boost::json::object& jwk = k.as_object();
    const boost::json::value* use = jwk.if_contains("use");
    if (use && !(use->is_string() && use->as_string() == "sig")) continue;  // an encryption key
    const boost::json::value* kty = jwk.if_contains("kty");
    if (!kty || !kty->is_string() ||
        (kty->as_string() != "RSA" && kty->as_string() != "EC" && kty->as_string() != "oct"))
      continue;
    out.push_back(jwk_key(jwk, at));
  }
  return out;
}

bool verify_signature(const JwtVerifier::Key& key, std::string_view input, std::string_view signature) {
  if (key.algorithm == JwtAlgorithm::hs256) {
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    if (HMAC(EVP_sha256(), key.secret.data(), static_cast<int>(key.secret.size()), bytes(input), input.size(),
             mac, &size) == nullptr)
      return false;
    return signature.size() == size && CRYPTO_memcmp(mac, signature.data(), size) == 0;
  }
  std::string der;
  if (key.algorithm == JwtAlgorithm::es256) {
    // JOSE's R || S (RFC 7518 §3.4) as the DER ECDSA-Sig-Value OpenSSL verifies.
    if (signature.size() != 64) return false;
    ECDSA_SIG* sig = ECDSA_SIG_new();
    BIGNUM* r = BN_bin2bn(bytes(signature), 32, nullptr);
    BIGNUM* s = BN_bin2bn(bytes(signature) + 32, 32, nullptr);
    if (sig == nullptr || r == nullptr || s == nullptr || ECDSA_SIG_set0(sig, r, s) != 1) {
      BN_free(r);
      BN_free(s);
      ECDSA_SIG_free(sig);
      return false;
    }
    unsigned char* out = nullptr;
    const int len = i2d_ECDSA_SIG(sig, &out);
    ECDSA_SIG_free(sig);
    if (len <= 0) return false;
    der.assign(reinterpret_cast<char*>(out), static_cast<std::size_t>(len));
    OPENSSL_free(out);
    signature = der;
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok = ctx != nullptr &&
                  EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key.pkey) == 1 &&
                  EVP_DigestVerify(ctx, bytes(signature), signature.size(), bytes(input), input.size()) == 1;
  EVP_MD_CTX_free(ctx);
  return ok;
}

}  // namespace

std::optional<JwtAlgorithm> jwt_algorithm(std::string_view name) noexcept {
  if (name == "HS256") return JwtAlgorithm::hs256;
  if (name == "RS256") return JwtAlgorithm::rs256;
  if (name == "ES256") return JwtAlgorithm::es256;
  return std::nullopt;
}

std::string_view jwt_algorithm_name(JwtAlgorithm a) noexcept {
  switch (a) {
    case JwtAlgorithm::hs256:
      return "HS256";
    case JwtAlgorithm::rs256:
      return "RS256";
    case JwtAlgorithm::es256:
      return "ES256";
  }
  return "";
}

JwtVerifier::JwtVerifier(JwtSettings settings, std::vector<std::shared_ptr<const Key>> keys)
    : settings_(std::move(settings)), keys_(std::move(keys)) {}
JwtVerifier::~JwtVerifier() = default;

std::shared_ptr<const JwtVerifier> JwtVerifier::load(JwtSettings settings, const std::string& key_file,
                                                     const std::string& jwks_file) {
  std::vector<KeyPtr> keys =
      key_file.empty() ? jwks(jwks_file) : std::vector<KeyPtr>{pem_or_secret(key_file)};
  const std::string file = key_file.empty() ? "jwks_file '" + jwks_file + "'" : "key_file '" + key_file + "'";
  if (keys.empty()) throw std::runtime_error(file + " holds no signing key (kty RSA, EC or oct)");
  for (JwtAlgorithm a : settings.algorithms) {
    bool found = false;
    for (const KeyPtr& k : keys) found = found || k->algorithm == a;
    if (!found)
      throw std::runtime_error(
          std::string(jwt_algorithm_name(a)) + " is allowed but " + file +
          " holds no key for it (an HS256 secret, an RSA key for RS256, a P-256 key for ES256)");
  }
  std::vector<std::shared_ptr<const Key>> usable;
  for (KeyPtr& k : keys) usable.push_back(std::move(k));
  return std::make_shared<const JwtVerifier>(std::move(settings), std::move(usable));
}

ProblemOr<std::string_view> JwtVerifier::token_of(std::string_view value) const {
  const auto space = value.find(' ');
  if (space != std::string_view::npos) {
    if (!util::iequals(value.substr(0, space), "bearer")) return invalid("must come as Bearer credentials");
    return value.substr(space + 1);
  }
  if (util::iequals(settings_.header, "Authorization")) return invalid("must come as Bearer credentials");
  return value;
}

ProblemOr<std::string> JwtVerifier::verify(std::string_view token, std::string_view claim,
                                           std::int64_t now) const {
  if (token.size() > kMaxToken) return invalid("is longer than 8192 characters");
  const auto dot1 = token.find('.');
  const auto dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos)
    return invalid("is not three base64url parts (a JWS in compact form)");
  const std::optional<std::string> header_text = base64url_decode(token.substr(0, dot1));
  const std::optional<std::string> payload_text = base64url_decode(token.substr(dot1 + 1, dot2 - dot1 - 1));
  const std::optional<std::string> signature = base64url_decode(token.substr(dot2 + 1));
  if (!header_text || !payload_text || !signature) return invalid("has a part that is not strict base64url");
  const std::optional<boost::json::object> header = json_object(*header_text);
  if (!header) return invalid("header is not a JSON object");

  const boost::json::value* alg_value = header->if_contains("alg");
  if (alg_value == nullptr || !alg_value->is_string()) return invalid("header has no alg");
  const std::optional<JwtAlgorithm> alg = jwt_algorithm(alg_value->as_string());
  bool allowed = false;
  for (JwtAlgorithm a : settings_.algorithms) allowed = allowed || (alg && a == *alg);
  if (!allowed) return invalid("is signed with an algorithm this gateway does not accept");
  if (header->contains("crit")) return invalid("header has crit extensions, which are not understood");
  const boost::json::value* kid_value = header->if_contains("kid");
  if (kid_value != nullptr && !kid_value->is_string()) return invalid("header's kid is not a string");
  const std::string_view kid = kid_value ? std::string_view(kid_value->as_string()) : std::string_view();

  // Only keys of the token's algorithm are tried: the key's type fixes its algorithm.
  const std::string_view input = token.substr(0, dot2);
  bool verified = false;
  for (const auto& key : keys_) {
    if (key->algorithm != *alg || (!kid.empty() && !key->kid.empty() && key->kid != kid)) continue;
    if (!kid.empty() && key->kid.empty() && keys_.size() > 1) continue;
    if ((verified = verify_signature(*key, input, *signature))) break;
  }
  if (!verified) return invalid("signature does not verify with any key of this gateway");

  const std::optional<boost::json::object> payload = json_object(*payload_text);
  if (!payload) return invalid("payload is not a JSON object");
  const std::optional<double> exp = number_member(*payload, "exp");
  if (!exp) return invalid("has no exp (a numeric date): a token that never expires is not accepted");
  const double leeway = static_cast<double>(settings_.leeway_seconds);
  if (static_cast<double>(now) >= *exp + leeway) return invalid("has expired");
  if (payload->contains("nbf")) {
    const std::optional<double> nbf = number_member(*payload, "nbf");
    if (!nbf) return invalid("nbf is not a numeric date");
    if (static_cast<double>(now) + leeway < *nbf) return invalid("is not valid yet (nbf)");
  }
  if (!settings_.issuer.empty()) {
    const boost::json::value* iss = payload->if_contains("iss");
    if (iss == nullptr || !iss->is_string() || iss->as_string() != settings_.issuer)
      return invalid("was issued by another issuer (iss)");
  }
  if (!settings_.audience.empty()) {
    bool ours = false;
    auto check = [&](const boost::json::value& v) {
      if (!v.is_string()) return;
      for (const std::string& a : settings_.audience) ours = ours || v.as_string() == a;
    };
    if (const boost::json::value* aud = payload->if_contains("aud")) {
      if (aud->is_array())
        for (const boost::json::value& v : aud->as_array()) check(v);
      else
        check(*aud);
    }
    if (!ours) return invalid("is meant for another audience (aud)");
  }
  const boost::json::value* value = payload->if_contains(claim);
  // An integer claim (a user id that is a JSON number, 19-digit Snowflake ids included) is
  // taken as its exact decimal text; a number with a fraction or exponent is not exact.
  if (value != nullptr && value->is_int64()) return std::to_string(value->get_int64());
  if (value != nullptr && value->is_uint64()) return std::to_string(value->get_uint64());
  if (value == nullptr || !value->is_string() || value->as_string().empty())
    return invalid("has no " + std::string(claim) + " claim (a non-empty string or an integer)");
  // The claim becomes a scope or a principal, as a header's value would: no control
  // characters, and no longer than a header's value could reasonably be.
  const boost::json::string& text = value->as_string();
  if (text.size() > kMaxClaim || std::any_of(text.begin(), text.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7F;
      }))
    return invalid("claim " + std::string(claim) + " holds control characters or is over 1024 bytes");
  return std::string(text);
}

ProblemOr<std::string> jwt_claim_of(const JwtVerifier& verifier, std::string_view claim,
                                    std::span<const HeaderField> headers, bool required) {
  const std::string& name = verifier.settings().header;
  ProblemOr<std::optional<std::string>> value = read_header(headers, name);
  if (!value) return std::move(value).rejection();
  if (!*value || (*value)->empty()) {
    if (!required) return std::string();
    return Rejection{Problem::credentials_invalid, "the " + name + " header with a JWT is missing"};
  }
  ProblemOr<std::string_view> token = verifier.token_of(**value);
  if (!token) return std::move(token).rejection();
  const auto now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  return verifier.verify(*token, claim, now.count());
}

}  // namespace idem::gateway
