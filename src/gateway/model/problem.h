// The problems the gateway itself answers with (docs/http.md, docs/control-api.md), as values: the core
// decides which problem applies, the HTTP layer turns it into an application/problem+json
// reply with the status given here. This is the one place that maps problems to HTTP
// status codes. Pure; safe for concurrent use.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace idem::gateway {

enum class Problem {
  key_missing,        // 400 key required but absent
  key_invalid,        // 400 key not 1–255 visible ASCII characters, or a template value is an object/array
  subject_missing,    // 400 subject configured but absent
  body_too_large,     // 413 body over max_body
  body_invalid,       // 400 json.* template or json fingerprint, body not JSON
  token_missing,      // 400 Idempotency-Token absent on a token route
  token_invalid,      // 400 token never issued, expired, or issued to another subject
  key_reused,         // 422 same key, different fingerprint
  in_progress,        // 409 the first request is still in flight
  duplicate,          // 409 on_duplicate: reject and a completed repeat
  outcome_uncertain,  // 409 the first request's outcome is unknown (on_uncertain: hold)
  result_not_stored,  // 409 the first response was over max_result
  locked,             // 409 lock mode, key busy
  upstream_unavailable,    // 502
  upstream_timeout,        // 504
  store_unavailable,       // 503 the store applied nothing: retry as is
  store_timeout,           // 504 control API: the store call's outcome is unknown (it may have applied)
  unauthorized,            // 401 admin listener without the bearer token
  forbidden,               // 403 admin listener without a token: a browser's or a foreign Host's request
  unsupported_media_type,  // 415 control API POST whose body is not application/json
  request_invalid,         // 400 malformed control API request
  overloaded,              // 503 the request bodies held in memory reached their cap
  shutting_down,           // 503 /readyz while the gateway drains (SIGTERM)
  version_not_supported,   // 505 not HTTP/1.0 or HTTP/1.1 (an HTTP/2 preface, say)
  header_too_large,        // 431 a request head over 16 KiB (chunk extensions and trailers included)
  not_found,               // 404 admin listener: no such endpoint, or no such record
  method_not_allowed,      // 405 admin listener: the endpoint takes another method
  // 400 a value the route reads could be read another way by the service: a field sent
  // twice or in another case, named in Connection, or a method override toward another
  // route (docs/gateway.md, "One request, one reading")
  request_ambiguous,
  too_many_tokens,  // 429 the tokens endpoint's bounds (tokens.per_client, tokens.max_live)
  // 409 the key's record belongs to another principal (other credentials, or none): never
  // replayed, never run again (docs/http.md, "Whose answer a replay is")
  principal_mismatch,
  // 401 a route whose subject or principal is `jwt` and a token that does not verify (bad
  // signature, expired, not yet valid, another issuer or audience, malformed), or none
  // where one is needed (docs/http.md, "Whose answer a replay is")
  credentials_invalid,
};

// "key-missing": the <name> of "urn:idem:problem:<name>".
std::string_view problem_name(Problem p) noexcept;

// "key_missing": the outcome label of idem_requests_total (docs/admin.md: `-` written `_`).
std::string_view problem_metric_name(Problem p) noexcept;

// The HTTP status the problem is answered with (400, 401, 403, 404, 405, 409, 413, 415, 422,
// 429, 431, 502, 503, 504, 505).
int problem_status(Problem p) noexcept;

// A short human title for the problem+json "title" ("Idempotency key missing").
std::string_view problem_title(Problem p) noexcept;

// The problem+json "retryable" (docs/http.md, "Every problem"): true when sending the same
// request again with the same key can get another answer (in-progress, locked, a store or
// upstream that is down or timed out, overloaded, shutting down, too many tokens), false
// when the same request will be refused again until the client changes it or an operator
// acts (a key missing, invalid or reused, an outcome held uncertain, a result not stored...).
// Retrying with the same key never runs the work twice; this says only whether it helps.
bool problem_retryable(Problem p) noexcept;

// Why a request was rejected: the problem and a detail for the problem+json "detail"
// field. Details name headers and fields, never the values the client sent.
struct Rejection {
  Problem problem;
  std::string detail;
};

// A value or the Rejection that explains its absence; the core's request-path result
// (no exceptions on the request path).
template <class T>
class [[nodiscard]] ProblemOr {
 public:
  ProblemOr(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  ProblemOr(Rejection rejection) : v_(std::in_place_index<1>, std::move(rejection)) {}

  bool is_ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return is_ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // The rejection; only when !is_ok().
  const Rejection& rejection() const& { return std::get<1>(v_); }
  Rejection&& rejection() && { return std::get<1>(std::move(v_)); }
  Problem problem() const { return rejection().problem; }

 private:
  std::variant<T, Rejection> v_;
};

}  // namespace idem::gateway
