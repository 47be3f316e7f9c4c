// The problem table (gateway/model/problem.h): the one place problems meet HTTP statuses.
#include "gateway/model/problem.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace idem::gateway {
namespace {

constexpr Problem kLast = Problem::credentials_invalid;

TEST(ProblemTable, EveryProblemHasItsOwnNameItsMetricLabelATitleAndAnErrorStatus) {
  // The rows up to the table's fall-through: a problem added after kLast is checked too,
  // and kLast has to follow it.
  int rows = 0;
  while (problem_name(static_cast<Problem>(rows)) != "internal") ++rows;
  EXPECT_EQ(rows, static_cast<int>(kLast) + 1) << "kLast is not the last problem";
  std::set<std::string> names;
  for (int i = 0; i < rows; ++i) {
    const auto p = static_cast<Problem>(i);
    const std::string name(problem_name(p));
    EXPECT_TRUE(names.insert(name).second) << name << " named twice";
    std::string metric = name;
    for (char& c : metric)
      if (c == '-') c = '_';
    EXPECT_EQ(problem_metric_name(p), metric);
    EXPECT_FALSE(problem_title(p).empty()) << name;
    EXPECT_GE(problem_status(p), 400) << name;
    EXPECT_LE(problem_status(p), 599) << name;
  }
}

// Admin and framing answers that once were written by hand beside the table.
TEST(ProblemTable, TheHttpLevelRefusalsAreRows) {
  EXPECT_EQ(problem_status(Problem::not_found), 404);
  EXPECT_EQ(problem_name(Problem::not_found), "not-found");
  EXPECT_EQ(problem_status(Problem::method_not_allowed), 405);
  EXPECT_EQ(problem_name(Problem::method_not_allowed), "method-not-allowed");
  EXPECT_EQ(problem_status(Problem::header_too_large), 431);
  EXPECT_EQ(problem_name(Problem::header_too_large), "header-too-large");
  EXPECT_EQ(problem_status(Problem::too_many_tokens), 429);
  EXPECT_EQ(problem_name(Problem::too_many_tokens), "too-many-tokens");
}

// A record of another principal is the key's state, not the caller's lack of a right
// (docs/http.md, "Whose answer a replay is"): 409 beside in-progress and duplicate, and the
// same request never gets another answer.
TEST(ProblemTable, APrincipalMismatchIsAConflictThatRetryingDoesNotChange) {
  EXPECT_EQ(problem_status(Problem::principal_mismatch), 409);
  EXPECT_EQ(problem_name(Problem::principal_mismatch), "principal-mismatch");
  EXPECT_FALSE(problem_retryable(Problem::principal_mismatch));
  EXPECT_EQ(problem_status(Problem::credentials_invalid), 401);
  EXPECT_EQ(problem_name(Problem::credentials_invalid), "credentials-invalid");
  EXPECT_FALSE(problem_retryable(Problem::credentials_invalid));
}

// The retry hint, row by row (docs/http.md, "Every problem"): true only where the same
// request with the same key can get another answer later.
TEST(ProblemTable, RetryableSaysWhetherTheSameRequestCanSucceedLater) {
  const std::set<Problem> retryable = {
      Problem::in_progress,          Problem::locked,
      Problem::upstream_unavailable, Problem::upstream_timeout,
      Problem::store_unavailable,    Problem::store_timeout,
      Problem::overloaded,           Problem::shutting_down,
      Problem::too_many_tokens,
  };
  for (int i = 0; i <= static_cast<int>(kLast); ++i) {
    const auto p = static_cast<Problem>(i);
    EXPECT_EQ(problem_retryable(p), retryable.contains(p)) << problem_name(p);
  }
  EXPECT_FALSE(problem_retryable(Problem::key_reused));
  EXPECT_FALSE(problem_retryable(Problem::key_invalid));
  EXPECT_FALSE(problem_retryable(Problem::outcome_uncertain));
}

}  // namespace
}  // namespace idem::gateway
