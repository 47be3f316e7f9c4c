// What an upstream exchange means for the claim it ran under (docs/http.md, "Every
// problem", and docs/gateway.md, "When the store fails"): a pure decision over what came back,
// tested row by row without sockets; the claim runner's settle_for (idem/on_uncertain.h) then
// turns it into commit, release, uncertain or leave under the route's on_uncertain.
#pragma once

#include "idem/on_uncertain.h"

namespace idem::gateway {

// How the exchange ended, as far as the claim is concerned.
enum class Exchange {
  answered,  // a response came (whatever its status)
  not_sent,  // the connection was refused: nothing reached the upstream
  unknown,   // sent, and no answer (a timeout, the connection broken mid-exchange)
};

// Statuses after which a retry must run again: 408, 409, 425, 429, and every 5xx unless
// the route stores them (cache_5xx).
constexpr bool retry_runs_again(unsigned status, bool cache_5xx) noexcept {
  if (status >= 500) return !cache_5xx;
  return status == 408 || status == 409 || status == 425 || status == 429;
}

// answered → succeeded (a result to keep) or failed (a retry runs again); not_sent → failed;
// unknown → unknown.
constexpr WorkEnd work_end(Exchange e, unsigned status, bool cache_5xx) noexcept {
  switch (e) {
    case Exchange::answered:
      return retry_runs_again(status, cache_5xx) ? WorkEnd::failed : WorkEnd::succeeded;
    case Exchange::not_sent:
      return WorkEnd::failed;
    case Exchange::unknown:
      return WorkEnd::unknown;
  }
  return WorkEnd::unknown;
}

}  // namespace idem::gateway
