// The claim runner's decision tables (idem/on_uncertain.h): pure functions, no store, no
// Asio.
#include "idem/on_uncertain.h"

namespace idem {

BeginStep after_begin(const Result<BeginOutcome>& begun, OnUncertain on_uncertain,
                      std::string_view uncertain_marker) noexcept {
  if (!begun)
    return begun.status().code() == StatusCode::deadline_exceeded ? BeginStep::unknown
                                                                  : BeginStep::not_applied;
  switch (begun->kind) {
    case BeginOutcome::Kind::acquired:
      return begun->recovered && on_uncertain == OnUncertain::hold ? BeginStep::hold_uncertain
                                                                   : BeginStep::run;
    case BeginOutcome::Kind::replay:
      return !uncertain_marker.empty() && begun->result.starts_with(uncertain_marker) ? BeginStep::uncertain
                                                                                      : BeginStep::replay;
    case BeginOutcome::Kind::mismatch:
      return BeginStep::mismatch;
    case BeginOutcome::Kind::in_progress:
      return BeginStep::busy;
  }
  return BeginStep::not_applied;
}

Settlement settle_for(WorkEnd end, OnUncertain on_uncertain, bool claim_lost) noexcept {
  if (claim_lost) return Settlement::none;
  switch (end) {
    case WorkEnd::succeeded:
      return Settlement::commit;
    case WorkEnd::failed:
      return Settlement::release;
    case WorkEnd::unknown:
      return on_uncertain == OnUncertain::hold ? Settlement::mark_uncertain : Settlement::leave;
  }
  return Settlement::leave;
}

const char* to_string(OnUncertain p) noexcept { return p == OnUncertain::hold ? "hold" : "retry"; }

const char* to_string(BeginStep s) noexcept {
  switch (s) {
    case BeginStep::run:
      return "run";
    case BeginStep::hold_uncertain:
      return "hold_uncertain";
    case BeginStep::replay:
      return "replay";
    case BeginStep::uncertain:
      return "uncertain";
    case BeginStep::mismatch:
      return "mismatch";
    case BeginStep::busy:
      return "busy";
    case BeginStep::not_applied:
      return "not_applied";
    case BeginStep::unknown:
      return "unknown";
  }
  return "?";
}

const char* to_string(Settlement s) noexcept {
  switch (s) {
    case Settlement::commit:
      return "commit";
    case Settlement::release:
      return "release";
    case Settlement::mark_uncertain:
      return "mark_uncertain";
    case Settlement::leave:
      return "leave";
    case Settlement::none:
      return "none";
  }
  return "?";
}

}  // namespace idem
