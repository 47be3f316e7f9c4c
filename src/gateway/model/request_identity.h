// Who a protected request belongs to and what it is: the (scope, key) of its record and
// its fingerprint, decided in the order docs/http.md, "Every problem", gives, cheapest checks first:
//
//   check_head        Connection → subject → key present and valid (header and token keys)
//   (the pipeline)    read the body, refusing more than check_body_size allows
//   identify          render and validate template keys → fingerprint
//   (the pipeline)    claim → forward → store or release → answer
//
// Every check runs before anything is claimed: a request rejected here leaves no record,
// consumes no token and takes no lock. Pure (no I/O); safe for concurrent use.
#pragma once

#include <array>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "gateway/model/problem.h"
#include "gateway/model/request_view.h"
#include "gateway/model/route.h"

namespace idem::gateway {

enum class Verdict {
  protect,      // claim (scope, key) with the fingerprint
  unprotected,  // required: false and no key: forward as is (counted `unprotected`)
  reject,       // answer the rejection's problem; nothing is claimed
};

struct Identity {
  std::string scope;  // the subject's value, or "" without a subject
  // The client's key, the token, or the rendered template: what the upstream receives as
  // Idempotency-Key, and what token operations take.
  std::string key;
  // stored_key(route.key_space, key): what record and lock operations take, so that no
  // key a client chooses reaches the records of another key space.
  std::string record_key;
  std::string fingerprint;  // 16 bytes (none_fingerprint() under `none`); "" in lock mode
  // The value of the route's principal (principal_of, principal.h): "" when the record binds
  // no one. The pipeline folds its keyed hash into the fingerprint (PrincipalBinder). Read
  // in replay mode only.
  std::string principal;
  // On a JSON-RPC route, the call's `id` exactly as sent ("null" for a refused batch), set
  // on protect and on a rejection once the body is read: a replay carries it, and a
  // rejection is answered as a JSON-RPC error to it. "" otherwise.
  std::string jsonrpc_id;
};

struct Decision {
  Verdict verdict = Verdict::protect;
  Rejection rejection{};  // only when verdict == reject
  Identity identity;      // only when verdict == protect (and jsonrpc_id on a reject)

  static Decision reject(Rejection r) { return {Verdict::reject, std::move(r), {}}; }
  static Decision unprotected() { return {Verdict::unprotected, {}, {}}; }
};

// The checks that need only the request head (method, target, headers; the body is not
// looked at), in order:
//   0. the Connection header names no field the route reads
//      (connection_names_a_read_field) → request_ambiguous
//   1. subject (route.policy.subject; on a token route that is tokens.subject): subject_of;
//      then, in replay mode, the principal (principal_of): request_ambiguous when its header
//      comes twice
//   2. header key (parse_key_header: plain or Structured Field string): absent →
//      key_missing, or unprotected under `required: false`; malformed or sent twice →
//      key_invalid. Token key (Idempotency-Token): absent → token_missing, or unprotected
//      under `required: false`; malformed or sent twice → token_invalid (whether the token
//      was issued is for the store to say). Template keys: left to identify().
// On protect, identity holds the scope and, for header and token keys, the key. A JSON-RPC
// route checks only step 0 here: which call the body is decides whether the rest applies.
Decision check_head(const Route& route, const RequestView& head);

// body_too_large when a body of `size` bytes exceeds the route's max_body; the pipeline
// checks Content-Length with it before reading, and stops reading beyond it.
std::optional<Rejection> check_body_size(const Route& route, std::uint64_t size);

// The checks that need the body, after check_head said protect (any other `head` is
// returned unchanged):
//   3. template key: render_key; key_missing under `required: false` → unprotected;
//      key_missing, key_invalid, body_invalid, request_ambiguous otherwise → reject
//   4. fingerprint (replay mode only): request_fingerprint; body_invalid,
//      request_ambiguous → reject
// On a JSON-RPC route (docs/configuration.md, "JSON-RPC routes"), first: a batch →
// body_invalid; a body that is no call of a listed method (another method, a notification,
// not JSON) → unprotected; then steps 1-3 for the call, and its fingerprint ("jsonrpc", the
// call's canonical form without `id`, `jsonrpc` and `params._meta`).
// On protect, identity is complete, record_key included.
// The body is parsed as JSON at most once for both. `params` are the route's captures.
Decision identify(const Route& route, const PathParams& params, const RequestView& request, Decision head);

// The scope a subject gives a request: "" for none; for header:NAME the header's value, for
// header-hash:NAME hash_subject(value), read by read_header (request_reading.h: sent once,
// Authorization normalised). subject_missing when the header is absent or empty (also
// when `required: false`), request_ambiguous when it is sent twice. The token endpoint
// scopes the tokens it issues by the same function.
ProblemOr<std::string> subject_of(const Subject& subject, std::span<const HeaderField> headers);

// All of the above for a request whose body is already read: check_head →
// check_body_size → identify. For tests and fuzzers, and for callers holding the whole
// request.
Decision identify_request(const RouteMatch& match, const RequestView& request);

// The scope of a header-hash subject: the lowercase hex SHA-256 of `value` (64 characters),
// which an operator can compute to find a user's records. Throws bad_alloc when OpenSSL
// cannot allocate.
std::string hash_subject(std::string_view value);

// The request log's key_hash (docs/observability.md): the first 12 hex digits of
// HMAC-SHA256(secret, scope "\n" stored key). Keyed, so that a key built from guessable ids
// (an order number) cannot be found in the log by hashing guesses; lines of one key share a
// hash for as long as the secret lasts. An empty `secret` is replaced by 32 random bytes
// (one process's own). Immutable once built; safe for concurrent use. Throws bad_alloc
// when OpenSSL cannot allocate.
class KeyHasher {
 public:
  explicit KeyHasher(std::string_view secret);
  std::string operator()(std::string_view scope, std::string_view key) const;
  // The 32 bytes of HMAC-SHA256(secret, a "\n" b), which operator() abbreviates.
  std::string mac(std::string_view a, std::string_view b) const;

 private:
  static constexpr std::size_t kBlock = 64;  // SHA-256's block: RFC 2104's B
  std::array<unsigned char, kBlock> inner_pad_{}, outer_pad_{};
};

}  // namespace idem::gateway
