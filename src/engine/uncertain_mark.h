// The record of an unknown outcome (docs/gateway.md, "When the store fails"): when the work
// under a claim may or may not have taken effect and `on_uncertain` is hold, the claim
// runner completes the record with the face's marker followed by a mark that says which
// attempt the service may have received, who found the outcome unknown, and when. An
// operator asks the service about exactly that attempt (docs/operations.md, "Uncertain
// records"); a late commit of the known result for that attempt may replace it
// (CommitArgs::over_uncertain).
//
// Text after the marker: "fence=<F>;instance=<I>;at=<ms since the Unix epoch>". A record
// written by an earlier release holds the marker alone (fence 0). Pure; no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "idem/record.h"

namespace idem {

struct UncertainMark {
  Fence fence = 0;         // the fence the service received; 0 when not known
  std::string instance;    // the runner (the gateway, the process) that marked it
  std::int64_t at_ms = 0;  // when, by that runner's clock; 0 when not known
  friend bool operator==(const UncertainMark&, const UncertainMark&) = default;
};

// `marker` followed by the mark; the marker alone when mark.fence is 0 (not known), as
// records of earlier releases hold it. `instance` must not contain ';' (it is cut there).
std::string uncertain_result(std::string_view marker, const UncertainMark& mark);

// The mark a stored result holds: nullopt when the result does not start with `marker`
// (an empty marker never matches); fence 0 for the marker alone or text it cannot read.
std::optional<UncertainMark> read_uncertain(std::string_view result, std::string_view marker);

// What every mark naming `fence` starts with: CommitArgs::over_uncertain for a commit of
// the claim with that fence.
std::string uncertain_prefix(std::string_view marker, Fence fence);

}  // namespace idem
