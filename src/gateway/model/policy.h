// What a protected route does (docs/configuration.md, "Policy keys": `defaults`, and the same keys on a
// route): how long claims and results live, whose records they are, what happens on duplicates, store
// failures and unknown outcomes, and what identifies a request. Plain values; a loaded
// Config is immutable and shared between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gateway/model/answer_rule.h"
#include "gateway/model/key_template.h"
#include "idem/clock.h"
#include "idem/on_uncertain.h"

namespace idem::gateway {

class JwtVerifier;  // jwt.h

// `subject`: none | header:NAME | header-hash:NAME | jwt[:CLAIM]. The subject's value scopes the
// route's records (docs/configuration.md, `subject`); header-hash uses the lowercase hex SHA-256 of the
// header's value, so raw credentials never reach the store; jwt the claim of a verified
// token (jwt.h).
struct Subject {
  enum class Kind { none, header, header_hash, jwt };
  Kind kind;
  std::string header;  // the header's name, for header and header_hash; the token's for jwt
  std::string claim;   // jwt: the claim (the block's `claim` unless named)
  std::shared_ptr<const JwtVerifier> jwt;  // jwt: the config's verifier

  Subject(Kind k = Kind::none, std::string h = {}, std::string c = {},
          std::shared_ptr<const JwtVerifier> j = {})
      : kind(k), header(std::move(h)), claim(std::move(c)), jwt(std::move(j)) {}

  friend bool operator==(const Subject&, const Subject&) = default;
};

// `principal`: whose a record is, so that its answer is replayed to that principal only
// (docs/configuration.md, `principal`; docs/http.md, "Whose answer a replay is").
//   header   the header's value (`authorization` is header:Authorization, read normalised:
//            request_reading.h, normalize_credentials); absent → the record is bound to no one
//   jwt      the claim of the request's verified JWT (jwt.h); no token → bound to no one
//   subject  the route's subject, which already scopes its records: nothing more is bound
//   none     nothing is bound: any caller with the key and body gets the stored answer
// Unset, it is `subject` on a route with a subject and `authorization` elsewhere
// (effective_principal, principal.h).
struct Principal {
  enum class Kind { header, subject, none, jwt };
  Kind kind;
  std::string header;  // kind == header; the token's header for jwt
  std::string claim;   // jwt
  std::shared_ptr<const JwtVerifier> jwt;

  Principal(Kind k = Kind::header, std::string h = "Authorization", std::string c = {},
            std::shared_ptr<const JwtVerifier> j = {})
      : kind(k), header(std::move(h)), claim(std::move(c)), jwt(std::move(j)) {}

  friend bool operator==(const Principal&, const Principal&) = default;
};

// `fingerprint`: what makes two requests with one key "the same request".
//   body    method, path with query, Content-Type and the raw body (the default)
//   json    method, path with query and the body's RFC 8785 canonical form
//   fields  method, path without query and the listed template values, typed
//   none    no fingerprint: mismatch detection off
struct FingerprintRule {
  enum class Kind { body, json, fields, none };
  Kind kind = Kind::body;
  std::vector<KeyTemplate> fields;  // kind == fields: the templates, in order (never empty)
};

enum class OnStoreError { reject, pass };   // 503 store-unavailable | forward unprotected
enum class OnDuplicate { replay, reject };  // replay the stored response | 409 duplicate
// on_uncertain: hold (409 outcome-uncertain) | retry (run again after the lease); the same
// policy, by the same name, as the library's (idem/on_uncertain.h).
using idem::OnUncertain;

// The shortest lease a config may give. A claim is renewed every lease / 3 while the
// upstream works, so a shorter lease would call the store in a busy loop (0.4ms: every
// 133µs) and could not outlast one slow store call.
inline constexpr Duration kMinLease = std::chrono::milliseconds(100);

// Every duration here is at most kMaxDuration (3650d) and every size at most kMaxSize
// (1GiB) when read from a config (gateway/model/units.h).
struct Policy {
  Duration retention = std::chrono::hours(24);  // > 0: how long a completed result is replayed
  // >= kMinLease: how long a pending claim is held (renewed while the upstream works)
  Duration lease = std::chrono::seconds(60);
  Duration wait =
      std::chrono::seconds(5);  // >= 0: how long a concurrent duplicate waits; 0 answers 409 at once
  Duration upstream_timeout = std::chrono::seconds(30);  // > 0
  Subject subject;
  std::optional<Principal> principal;  // unset: effective_principal decides
  OnStoreError on_store_error = OnStoreError::reject;
  OnDuplicate on_duplicate = OnDuplicate::replay;
  OnUncertain on_uncertain = OnUncertain::hold;
  FingerprintRule fingerprint;
  bool cache_5xx = false;  // true: store 5xx responses too
  // Which answers are kept (docs/configuration.md, "Which answers are kept"): statuses that
  // release the key besides the defaults (200-599), and what a kept 2xx looks like.
  std::vector<unsigned> release_on;
  SuccessRule success_when;
  std::uint64_t max_body = 1024 * 1024;    // bytes; larger request bodies get 413
  std::uint64_t max_result = 1024 * 1024;  // bytes; larger response bodies are not stored
  // Where max_result was set: the config's line and dotted key ("routes[2].max_result",
  // "defaults.max_result"); line 0 and "" when it was not. For require_store_holds_results.
  int max_result_line = 0;
  std::string max_result_key;
};

}  // namespace idem::gateway
