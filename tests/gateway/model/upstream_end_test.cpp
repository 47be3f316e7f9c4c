// What an upstream exchange means for its claim (gateway/model/upstream_end.h), row by row, and
// with the claim runner's settle_for what the gateway then does with the record.
#include "gateway/model/upstream_end.h"

#include <gtest/gtest.h>

#include <vector>

namespace idem::gateway {
namespace {

struct Row {
  Exchange exchange;
  unsigned status;
  bool cache_5xx;
  WorkEnd expected;
};

TEST(WorkEnd, EveryKindOfAnswer) {
  const std::vector<Row> rows = {
      {Exchange::answered, 200, false, WorkEnd::succeeded},
      {Exchange::answered, 201, false, WorkEnd::succeeded},
      {Exchange::answered, 204, false, WorkEnd::succeeded},
      {Exchange::answered, 302, false, WorkEnd::succeeded},
      {Exchange::answered, 400, false, WorkEnd::succeeded},  // a 4xx is the answer to keep
      {Exchange::answered, 404, false, WorkEnd::succeeded},
      {Exchange::answered, 422, false, WorkEnd::succeeded},
      {Exchange::answered, 499, false, WorkEnd::succeeded},
      {Exchange::answered, 408, false, WorkEnd::failed},  // ask again: a retry runs again
      {Exchange::answered, 409, false, WorkEnd::failed},
      {Exchange::answered, 425, false, WorkEnd::failed},
      {Exchange::answered, 429, false, WorkEnd::failed},
      {Exchange::answered, 429, true, WorkEnd::failed},  // cache_5xx is about 5xx only
      {Exchange::answered, 500, false, WorkEnd::failed},
      {Exchange::answered, 503, false, WorkEnd::failed},
      {Exchange::answered, 599, false, WorkEnd::failed},
      {Exchange::answered, 500, true, WorkEnd::succeeded},
      {Exchange::answered, 504, true, WorkEnd::succeeded},
      {Exchange::not_sent, 0, false, WorkEnd::failed},
      {Exchange::not_sent, 0, true, WorkEnd::failed},
      {Exchange::unknown, 0, false, WorkEnd::unknown},
      {Exchange::unknown, 0, true, WorkEnd::unknown},
  };
  for (std::size_t i = 0; i < rows.size(); ++i)
    EXPECT_EQ(work_end(rows[i].exchange, rows[i].status, rows[i].cache_5xx), rows[i].expected)
        << "row " << i << ": status " << rows[i].status;
}

TEST(WorkEnd, WithTheRouteOnUncertainDecidesTheRecord) {
  struct Case {
    Exchange exchange;
    unsigned status;
    OnUncertain on_uncertain;
    Settlement expected;
  };
  const std::vector<Case> cases = {
      {Exchange::answered, 201, OnUncertain::hold, Settlement::commit},
      {Exchange::answered, 201, OnUncertain::retry, Settlement::commit},
      {Exchange::answered, 503, OnUncertain::hold, Settlement::release},
      {Exchange::not_sent, 0, OnUncertain::retry, Settlement::release},
      {Exchange::unknown, 0, OnUncertain::hold, Settlement::mark_uncertain},  // 409 outcome-uncertain
      {Exchange::unknown, 0, OnUncertain::retry, Settlement::leave},          // runs again after the lease
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    EXPECT_EQ(settle_for(work_end(c.exchange, c.status, false), c.on_uncertain, false), c.expected)
        << "case " << i;
    // A claim lost while the upstream worked belongs to its newer holder, whatever came back.
    EXPECT_EQ(settle_for(work_end(c.exchange, c.status, false), c.on_uncertain, true), Settlement::none)
        << "case " << i;
  }
}

}  // namespace
}  // namespace idem::gateway
