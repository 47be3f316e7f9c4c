// Config drift against live records (docs/operations.md, "Upgrade"): which records a
// config's routes would orphan or misread, so `idem check --store` can say so before the
// config is served. Pure (no I/O); safe for concurrent use.
//
// A record tells its route's semantics only partly (docs/gateway.md, "Key spaces"):
//   key          "<key_space>:<key>": the key space is what precedes the first ':' (a key
//                space holds no ':'); a key without ':' predates key spaces (or belongs to
//                the library's Guard or Deduplicator sharing the store)
//   scope        "" without a subject; 64 lowercase hex digits under header-hash; the
//                header's value under header (any non-empty text, 64 hex digits included)
//   fingerprint  none_fingerprint() under `none`; "" under `none` before that (and in the
//                library when the caller gave none); 16 other bytes under body, json or a
//                list of templates, which the bytes do not tell apart
// So these cannot be detected: a change between body, json and templates (repeats answer
// 422 key-reused: loud, not silent); a change of `key` (header name, template) within a
// key space; a change from header-hash to header, or of the subject's header name.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "gateway/model/route.h"
#include "idem/record.h"

namespace idem::gateway {

enum class Drift {
  no_key_space,          // a key without "<key_space>:"
  key_space_unrouted,    // no replay route of the config has this key space
  scope_shape,           // no route of its key space would produce a scope of this shape
  fingerprint_mode,      // a hashing rule's record read by `none`, or the reverse: 422 to every repeat
  fingerprint_any_body,  // "" (a `none` record of an earlier release) read by a hashing rule
};

struct DriftFinding {
  Drift drift;
  std::string key_space;  // "" for no_key_space
  std::size_t count = 0;  // records of the sample
  Record example;         // the first one met
};

// One finding per (drift, key space) met in `records`, in the order first met. Only
// replay-mode routes are considered: a lock-mode route stores no records. A record is
// checked against the routes of its key space whose subject its scope fits; it drifts in
// fingerprint only when none of those accepts its fingerprint.
std::vector<DriftFinding> find_drift(std::span<const Route> routes, std::span<const Record> records);

// One line for an operator: what the finding means, its count and its example.
std::string describe(const DriftFinding& finding);

}  // namespace idem::gateway
