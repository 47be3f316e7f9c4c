// A principal from a verified JSON Web Token (docs/configuration.md, "Principals from a
// JWT"; docs/http.md, "Whose answer a replay is"): the top-level `jwt` block's keys and
// checks, and the claim a route's `subject: jwt` or `principal: jwt` takes from a token.
//
// Only JWS compact tokens signed with an algorithm the block allows (HS256, RS256, ES256)
// are accepted; `none`, every other algorithm and a `crit` header are refused. A key's type
// fixes the one algorithm it verifies (an HMAC secret HS256, an RSA key RS256, a P-256 key
// ES256), so a token naming HS256 is never checked with an RSA public key as its secret.
// Every part is base64url without padding, decoded strictly (no other characters, no
// non-zero spare bits). `exp` is required and `nbf` checked when present, each with the
// block's leeway; `iss` and `aud` when the block names them.
//
// The keys are read when the config is (at start, on SIGHUP, by `idem check`): a file that
// cannot be read or holds no usable key is a ConfigError at the key that names it, and a
// reload that fails keeps the running config and its keys. Immutable once built; safe for
// concurrent use.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/model/problem.h"
#include "gateway/model/request_view.h"

namespace idem::gateway {

enum class JwtAlgorithm { hs256, rs256, es256 };

// "HS256" → hs256; nullopt for any other name ("none" included).
std::optional<JwtAlgorithm> jwt_algorithm(std::string_view name) noexcept;
std::string_view jwt_algorithm_name(JwtAlgorithm a) noexcept;

// The `jwt` block, as read (keys are loaded by JwtVerifier::load).
struct JwtSettings {
  std::vector<JwtAlgorithm> algorithms;  // never empty
  std::string header = "Authorization";  // where the token comes, after `Bearer `
  std::string issuer;                    // "" checks no `iss`
  std::vector<std::string> audience;     // empty checks no `aud`; else one must be in `aud`
  std::string claim = "sub";             // the claim subject: jwt / principal: jwt take
  std::int64_t leeway_seconds = 60;      // allowed clock skew for exp and nbf
};

class JwtVerifier {
 public:
  // One verification key: an HMAC secret, or an RSA or P-256 public key.
  struct Key;

  // Reads `key_file` (a PEM public key, RSA of at least 2048 bits or EC P-256; any other
  // file is an HS256 secret of at least 32 bytes, one trailing newline dropped) or
  // `jwks_file` (a JWK Set: `kty` RSA, EC with `crv` P-256, or oct; keys with `use` other
  // than `sig` and of other types are skipped). Exactly one of them is non-empty. Throws
  // std::runtime_error saying what is wrong with the file: unreadable, no usable key, a key
  // too short, or an allowed algorithm that no key verifies.
  static std::shared_ptr<const JwtVerifier> load(JwtSettings settings, const std::string& key_file,
                                                 const std::string& jwks_file);

  // The value of `claim` (a non-empty string, or an integer as its exact digits) of a token that verifies at
  // `now` (Unix seconds), or credentials_invalid saying why (never echoing the token).
  ProblemOr<std::string> verify(std::string_view token, std::string_view claim, std::int64_t now) const;

  // The token of a request's header value: after `Bearer ` (any case); on another header
  // than Authorization the value itself when it has no scheme. credentials_invalid for
  // another scheme.
  ProblemOr<std::string_view> token_of(std::string_view value) const;

  const JwtSettings& settings() const noexcept { return settings_; }

  JwtVerifier(JwtSettings settings, std::vector<std::shared_ptr<const Key>> keys);
  ~JwtVerifier();

 private:
  JwtSettings settings_;
  std::vector<std::shared_ptr<const Key>> keys_;
};

// The claim a request's JWT gives: the header `verifier` reads, verified now (the system
// clock). "" when the header is absent or empty and `required` is false; credentials_invalid
// otherwise, and for a token that does not verify; request_ambiguous for a header sent twice.
ProblemOr<std::string> jwt_claim_of(const JwtVerifier& verifier, std::string_view claim,
                                    std::span<const HeaderField> headers, bool required);

}  // namespace idem::gateway
