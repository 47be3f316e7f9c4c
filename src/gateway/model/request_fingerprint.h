// The fingerprint of a request under a route's `fingerprint` rule (docs/configuration.md; numbers:
// docs/gateway.md): what tells a repeat of the first request from a different request that reuses its key.
//
// The fields are part of the stored format (fingerprints persist in durable stores and are
// compared across gateway versions), so they must never change; the canonical form of JSON
// numbers changed once, to keep their exact value (docs/gateway.md, "Numbers"). Each rule
// starts with its own name, so two rules never produce the same fingerprint for one request:
//   body    "body", method, target (path with query), Content-Type (absent when missing),
//           raw body
//   json    "json", method, target (path with query), canonical form of the body
//           (idem::canonical_json: RFC 8785, numbers at their exact decimal value)
//   fields  "fields", method, path (without query), then for each template the fields
//           add_to_fingerprint gives (typed values; absent for missing and null)
//   none    "none" alone: one fingerprint for every request, so two requests under `none`
//           match each other and never a record a hashing rule wrote (a route whose
//           fingerprint differs between two gateways, or across a reload, answers
//           `422 key-reused` instead of replaying another body's response)
// The previous releases stored "" for `none`. The store matches an empty fingerprint on
// either side with anything (docs/design.md), so their records are still replayed, to
// every rule, until they expire (docs/operations.md, "Upgrade").
// Pure; safe for concurrent use with distinct RequestContexts.
#pragma once

#include <string>

#include "gateway/model/policy.h"
#include "gateway/model/problem.h"
#include "gateway/model/request_view.h"

namespace idem::gateway {

// The 16 fingerprint bytes (none_fingerprint() for `none`), or body_invalid when `json` meets a body that
// is not JSON (empty included) or a template needs a body that is not JSON / not a form;
// request_ambiguous when a template's value could be read another way (add_to_fingerprint).
ProblemOr<std::string> request_fingerprint(const FingerprintRule& rule, RequestContext& request);

// The fingerprint of every request under `none` (16 bytes); what `idem check --store`
// recognises a `none` route's records by.
const std::string& none_fingerprint();

}  // namespace idem::gateway
