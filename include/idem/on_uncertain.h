// The claim runner's decisions (docs/design.md, "One claim runner"): the unknown-outcome
// policy, what one begin's answer means, and what the end of the work means for its
// claim. Pure functions over values, tested row by row without a store; the claim runner
// acts on them, and the gateway's pure model reads them without Asio.
//
// Contract of this header: plain value types and pure functions only. It includes no
// Asio, no Beast and no store interface, so whatever includes it stays free of them
// (tests/layering/layering_test.py checks it).
//
// Thread safety: every function here is pure and safe to call from any thread.
#pragma once

#include <string_view>

#include "idem/operations.h"
#include "idem/status.h"

namespace idem {

// What happens when the outcome of an earlier attempt is unknown: its holder's lease ran
// out mid-run, or the work could not tell whether it took effect. The same two choices, by
// the same name, in the gateway's `on_uncertain`, GuardOptions and DeduplicatorOptions.
enum class OnUncertain {
  hold,   // at most once: the record is completed as uncertain; every repeat is told so
          // until an operator removes it or its retention passes. Nothing runs twice.
  retry,  // at least once: the claim is left to expire; then a repeat runs again under a
          // greater fence, which the work can check.
};

const char* to_string(OnUncertain p) noexcept;  // "hold" | "retry"

// What one begin's answer means.
enum class BeginStep {
  run,             // acquired: do the work under this claim
  hold_uncertain,  // acquired over an expired claim, under `hold`: the earlier outcome is
                   // unknown, so complete the record as uncertain and run nothing
  replay,          // completed: answer the stored result
  uncertain,       // completed as uncertain: answer "outcome unknown"; nothing runs
  mismatch,        // the key was used with another fingerprint: nothing runs
  busy,            // another caller holds the key: wait and begin again, or answer "in progress"
  not_applied,     // the store failed and did nothing (unavailable, ...): answer the failure
  unknown,         // the store may have applied it (deadline_exceeded): the claim, if any, is
                   // given back by owner; answer the failure
};

// `uncertain_marker` is what an uncertain record's result starts with (ClaimPolicy).
BeginStep after_begin(const Result<BeginOutcome>& begun, OnUncertain on_uncertain,
                      std::string_view uncertain_marker) noexcept;

// How the work under a claim ended.
enum class WorkEnd {
  succeeded,  // it has a result to keep: repeats replay it
  failed,     // it did not take effect, or may safely run again: a retry runs it again
  unknown,    // it may or may not have taken effect
};

// What then becomes of the claim.
enum class Settlement {
  commit,          // complete the record with the result
  release,         // give the claim back: a retry runs again
  mark_uncertain,  // complete the record as uncertain (hold)
  leave,           // keep it pending until its lease ends; then a repeat runs again (retry)
  none,            // the claim was lost while the work ran: the newer holder is left alone
};

Settlement settle_for(WorkEnd end, OnUncertain on_uncertain, bool claim_lost) noexcept;

const char* to_string(BeginStep s) noexcept;
const char* to_string(Settlement s) noexcept;

}  // namespace idem
