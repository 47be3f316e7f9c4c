#include "gateway/model/problem.h"

namespace idem::gateway {
namespace {

struct Entry {
  std::string_view name;
  std::string_view metric;
  int status;
  std::string_view title;
  // Whether the same request, sent again with the same key, can get another answer
  // (docs/http.md, "Every problem"): the problem+json "retryable".
  bool retryable;
};

Entry entry(Problem p) noexcept {
  switch (p) {
    case Problem::key_missing:
      return {"key-missing", "key_missing", 400, "Idempotency key missing", false};
    case Problem::key_invalid:
      return {"key-invalid", "key_invalid", 400, "Idempotency key invalid", false};
    case Problem::subject_missing:
      return {"subject-missing", "subject_missing", 400, "Subject missing", false};
    case Problem::body_too_large:
      return {"body-too-large", "body_too_large", 413, "Request body too large", false};
    case Problem::body_invalid:
      return {"body-invalid", "body_invalid", 400, "Request body invalid", false};
    case Problem::token_missing:
      return {"token-missing", "token_missing", 400, "Idempotency token missing", false};
    case Problem::token_invalid:
      return {"token-invalid", "token_invalid", 400, "Idempotency token invalid", false};
    case Problem::key_reused:
      return {"key-reused", "key_reused", 422, "Idempotency key reused for a different request", false};
    case Problem::principal_mismatch:
      return {"principal-mismatch", "principal_mismatch", 409, "Idempotency key used by another principal",
              false};
    case Problem::credentials_invalid:
      return {"credentials-invalid", "credentials_invalid", 401, "Credentials invalid", false};
    case Problem::in_progress:
      return {"in-progress", "in_progress", 409, "Request in progress", true};
    case Problem::duplicate:
      return {"duplicate", "duplicate", 409, "Duplicate request", false};
    case Problem::outcome_uncertain:
      return {"outcome-uncertain", "outcome_uncertain", 409, "Outcome of the first request unknown", false};
    case Problem::result_not_stored:
      return {"result-not-stored", "result_not_stored", 409, "Result not stored", false};
    case Problem::locked:
      return {"locked", "locked", 409, "Resource locked", true};
    case Problem::upstream_unavailable:
      return {"upstream-unavailable", "upstream_unavailable", 502, "Upstream unavailable", true};
    case Problem::upstream_timeout:
      return {"upstream-timeout", "upstream_timeout", 504, "Upstream timed out", true};
    case Problem::store_unavailable:
      return {"store-unavailable", "store_unavailable", 503, "Store unavailable", true};
    case Problem::store_timeout:
      return {"store-timeout", "store_timeout", 504, "Store call outcome unknown", true};
    case Problem::unauthorized:
      return {"unauthorized", "unauthorized", 401, "Unauthorized", false};
    case Problem::forbidden:
      return {"forbidden", "forbidden", 403, "Forbidden", false};
    case Problem::unsupported_media_type:
      return {"unsupported-media-type", "unsupported_media_type", 415, "Unsupported media type", false};
    case Problem::request_invalid:
      return {"request-invalid", "request_invalid", 400, "Request invalid", false};
    case Problem::overloaded:
      return {"overloaded", "overloaded", 503, "Gateway overloaded", true};
    case Problem::shutting_down:
      return {"shutting-down", "shutting_down", 503, "Gateway shutting down", true};
    case Problem::version_not_supported:
      return {"version-not-supported", "version_not_supported", 505, "HTTP version not supported", false};
    case Problem::header_too_large:
      return {"header-too-large", "header_too_large", 431, "Request header fields too large", false};
    case Problem::not_found:
      return {"not-found", "not_found", 404, "Not found", false};
    case Problem::method_not_allowed:
      return {"method-not-allowed", "method_not_allowed", 405, "Method not allowed", false};
    case Problem::request_ambiguous:
      return {"request-ambiguous", "request_ambiguous", 400, "Request ambiguous", false};
    case Problem::too_many_tokens:
      return {"too-many-tokens", "too_many_tokens", 429, "Too many tokens", true};
  }
  return {"internal", "internal", 500, "Internal error", false};  // unreachable for valid enumerators
}

}  // namespace

std::string_view problem_name(Problem p) noexcept { return entry(p).name; }
std::string_view problem_metric_name(Problem p) noexcept { return entry(p).metric; }
int problem_status(Problem p) noexcept { return entry(p).status; }
std::string_view problem_title(Problem p) noexcept { return entry(p).title; }
bool problem_retryable(Problem p) noexcept { return entry(p).retryable; }

}  // namespace idem::gateway
