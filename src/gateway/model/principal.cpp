#include "gateway/model/principal.h"

#include "gateway/model/jwt.h"
#include "gateway/model/request_reading.h"

namespace idem::gateway {
namespace {

// The key of installs without IDEM_PRINCIPAL_SECRET: public, and the same everywhere.
constexpr std::string_view kPublicSecret = "idem principal binding without IDEM_PRINCIPAL_SECRET";

constexpr std::size_t kBoundSize = kRequestFingerprintSize + kPrincipalTagSize;

}  // namespace

Principal effective_principal(const Policy& policy) {
  if (policy.principal) return *policy.principal;
  if (policy.subject.kind != Subject::Kind::none) return {Principal::Kind::subject, {}};
  return {};
}

ProblemOr<std::string> principal_of(const Principal& principal, std::span<const HeaderField> headers) {
  // Without a token a JWT principal, like a header, binds no one (a payment callback); a
  // token that does not verify is refused.
  if (principal.kind == Principal::Kind::jwt)
    return jwt_claim_of(*principal.jwt, principal.claim, headers, false);
  if (principal.kind != Principal::Kind::header) return std::string();
  ProblemOr<std::optional<std::string>> value = read_header(headers, principal.header);
  if (!value) return std::move(value).rejection();
  return *value ? std::move(**value) : std::string();
}

PrincipalBinder::PrincipalBinder(std::string_view secret) : mac_(secret.empty() ? kPublicSecret : secret) {}

std::string PrincipalBinder::bind(std::string fingerprint, std::string_view principal) const {
  if (principal.empty()) return fingerprint;
  fingerprint += mac_.mac("principal", principal).substr(0, kPrincipalTagSize);
  return fingerprint;
}

MismatchReading read_mismatch(std::string_view record, std::string_view request) noexcept {
  if (record.size() == kBoundSize) {
    const std::string_view tag = request.size() == kBoundSize ? request.substr(kRequestFingerprintSize) : "";
    return tag == record.substr(kRequestFingerprintSize) ? MismatchReading::key_reused
                                                         : MismatchReading::principal_mismatch;
  }
  if (record.size() == kRequestFingerprintSize && request.substr(0, kRequestFingerprintSize) == record)
    return MismatchReading::as_unbound;
  return MismatchReading::key_reused;
}

}  // namespace idem::gateway
