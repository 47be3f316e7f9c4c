// Whose answer a replay is (docs/http.md, "Whose answer a replay is"): a record remembers a
// keyed hash of the principal of the request that made it (its normalised Authorization,
// or the route's `principal` header), and a repeat of another principal, or of none, is
// refused, never replayed and never run.
//
// The hash travels in the fingerprint, so no store changes: the request's fingerprint is
// its 16 bytes (request_fingerprint.h) followed by the 16-byte tag of its principal, or
// the 16 bytes alone when it binds no one. The store compares fingerprints first, in every
// state (docs/design.md, "Whose a record is"), so another principal's begin is answered
// `mismatch` whether the record is pending, done or expired-pending: it can never wait
// for, be replayed, or take over the first principal's claim. read_mismatch then tells
// the gateway which refusal a mismatch is. Records written before this (16 bytes, or ""
// under `none`) bind no one. Pure; safe for concurrent use.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "gateway/model/policy.h"
#include "gateway/model/problem.h"
#include "gateway/model/request_identity.h"
#include "gateway/model/request_view.h"

namespace idem::gateway {

inline constexpr std::size_t kRequestFingerprintSize = 16;  // request_fingerprint's bytes
inline constexpr std::size_t kPrincipalTagSize = 16;        // the first bytes of the HMAC

// The policy's `principal`, or when unset: `subject` on a route with a subject (its records
// are already the subject's own, and a subject from a trusted proxy survives a token
// refresh), `authorization` elsewhere.
Principal effective_principal(const Policy& policy);

// The principal of a request: "" when it binds no one (`none`, `subject`, or the header
// absent or empty: a payment platform's callback carries no credentials); the header's
// value otherwise, an Authorization value as normalize_credentials gives it (`bearer  abc`
// is `Bearer abc`); under `jwt` the claim of the verified token (jwt_claim_of), "" without a
// token, credentials_invalid for one that does not verify. request_ambiguous when the
// header comes in more than one field line.
ProblemOr<std::string> principal_of(const Principal& principal, std::span<const HeaderField> headers);

// Folds a principal into a fingerprint: the fingerprint unchanged when `principal` is "",
// else the fingerprint followed by the first kPrincipalTagSize bytes of
// HMAC-SHA256(secret, "principal" "\n" principal). The secret is the install's
// (IDEM_PRINCIPAL_SECRET): gateways sharing a store must share it, or each refuses the
// others' repeats. An empty secret is replaced by a fixed, public one, so that restarts
// and gateways without a secret still agree (a leaked record then lets a guessable
// credential, a Basic password, be tried offline). Immutable; safe for concurrent use.
class PrincipalBinder {
 public:
  explicit PrincipalBinder(std::string_view secret);
  std::string bind(std::string fingerprint, std::string_view principal) const;

 private:
  KeyHasher mac_;
};

// What a store's `mismatch` means, given the record's fingerprint (read back with `get`)
// and the request's (bound by PrincipalBinder):
//   principal_mismatch  the record is bound and the request's principal is another one, or
//                       none; checked before the body, so that another principal cannot
//                       learn whether its body equals the first request's
//   as_unbound          the record binds no one (a request without credentials made it, or
//                       a release before principals) and the request is the same apart
//                       from its principal: begin again with the record's fingerprint, so
//                       it is treated as today (replayed, waits, or runs)
//   key_reused          the same principal (or no binding) and another request
enum class MismatchReading { key_reused, principal_mismatch, as_unbound };
MismatchReading read_mismatch(std::string_view record, std::string_view request) noexcept;

}  // namespace idem::gateway
