// What a request is answered when the record of its key already holds a result
// (docs/http.md, "Every problem"): one table over what the record holds and the route's
// on_duplicate, so the pipeline has no chain of ifs for it. Pure; safe for concurrent use.
//
//   the record holds                     on_duplicate: replay       on_duplicate: reject
//   a response                           replay it                  409 duplicate
//   a response too large to store        409 result-not-stored      409 duplicate
//   an unknown outcome (uncertain)       409 outcome-uncertain      409 outcome-uncertain
//   JSON written by the control API      409 result-not-stored      409 result-not-stored
//   bytes that do not decode             409 result-not-stored      409 result-not-stored
#pragma once

#include <optional>
#include <string>

#include "gateway/model/policy.h"
#include "gateway/model/problem.h"
#include "gateway/model/stored_result.h"
#include "idem/status.h"

namespace idem::gateway {

struct ReplyPlan {
  std::optional<Problem> problem;  // nullopt: replay the stored response
  std::string detail;              // the problem's detail
};

// `stored` is what decode_stored_result made of the record's bytes.
ReplyPlan reply_for(const Result<StoredResult>& stored, OnDuplicate on_duplicate);

}  // namespace idem::gateway
