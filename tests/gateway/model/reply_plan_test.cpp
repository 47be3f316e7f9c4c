// reply_for (model/reply_plan.h): every row of its table, under both on_duplicate values.
#include "gateway/model/reply_plan.h"

#include <gtest/gtest.h>

namespace idem::gateway {
namespace {

Result<StoredResult> held(StoredResult::Kind kind) {
  StoredResult r;
  r.kind = kind;
  r.response.status = 201;
  if (kind == StoredResult::Kind::json) r.json = "{}";
  return decode_stored_result(encode(r));
}

struct Case {
  const char* what;
  Result<StoredResult> stored;
  std::optional<Problem> on_replay;
  std::optional<Problem> on_reject;
};

TEST(ReplyPlan, EveryRowUnderBothPolicies) {
  const Case cases[] = {
      {"a response", held(StoredResult::Kind::response), std::nullopt, Problem::duplicate},
      {"too large to store", held(StoredResult::Kind::not_stored), Problem::result_not_stored,
       Problem::duplicate},
      {"uncertain", held(StoredResult::Kind::uncertain), Problem::outcome_uncertain,
       Problem::outcome_uncertain},
      {"control API JSON", held(StoredResult::Kind::json), Problem::result_not_stored,
       Problem::result_not_stored},
      {"undecodable", decode_stored_result("not a stored result"), Problem::result_not_stored,
       Problem::result_not_stored},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const ReplyPlan replay = reply_for(c.stored, OnDuplicate::replay);
    const ReplyPlan reject = reply_for(c.stored, OnDuplicate::reject);
    EXPECT_EQ(replay.problem, c.on_replay);
    EXPECT_EQ(reject.problem, c.on_reject);
    // A problem always says why; a replay needs no words.
    EXPECT_EQ(replay.detail.empty(), !replay.problem);
    EXPECT_EQ(reject.detail.empty(), !reject.problem);
  }
}

TEST(ReplyPlan, AResponseTooLargeToStoreNamesItsStatus) {
  const ReplyPlan p = reply_for(held(StoredResult::Kind::not_stored), OnDuplicate::replay);
  EXPECT_EQ(p.detail, "the first response (status 201) was too large to store");
}

}  // namespace
}  // namespace idem::gateway
