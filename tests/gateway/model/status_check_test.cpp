// The status endpoint's path and answers (docs/http.md, "When the service can say what
// happened"), row by row: only a definite answer resolves an unknown outcome.
#include "gateway/model/status_check.h"

#include <gtest/gtest.h>

namespace idem::gateway {
namespace {

TEST(StatusCheck, TheTargetCarriesTheKeyEncodedAndTheFence) {
  EXPECT_EQ(status_target("/orders/by-key/{key}", "o-1", 7), "/orders/by-key/o-1");
  EXPECT_EQ(status_target("/s/{key}?fence={fence}", "a b/订", 42), "/s/a%20b%2F%E8%AE%A2?fence=42");
}

TEST(StatusCheck, PathsAreChecked) {
  EXPECT_FALSE(status_path_error("/orders/by-key/{key}"));
  EXPECT_FALSE(status_path_error("/s/{key}?fence={fence}"));
  EXPECT_TRUE(status_path_error("orders/{key}"));
  EXPECT_TRUE(status_path_error("/orders/{id}"));
  EXPECT_TRUE(status_path_error("/orders/{key"));
  EXPECT_TRUE(status_path_error("/orders/key}"));
  EXPECT_TRUE(status_path_error("/orders/ {key}"));
}

TEST(StatusCheck, OnlyDefiniteAnswersResolve) {
  using R = StatusReading;
  struct Row {
    unsigned status;
    std::optional<std::string_view> outcome, original;
    R reading;
    unsigned original_status;
  };
  const Row rows[] = {
      {200, "done", "201", R::done, 201},
      {200, "done", std::nullopt, R::done, 200},
      {200, "done", "99", R::unknown, 0},
      {200, "done", "201x", R::unknown, 0},
      {200, "done", "600", R::unknown, 0},
      {200, std::nullopt, "201", R::unknown, 0},  // a catch-all 200 says nothing
      {201, "done", "201", R::unknown, 0},
      {404, "none", std::nullopt, R::never_happened, 0},
      {410, "none", std::nullopt, R::never_happened, 0},
      {404, std::nullopt, std::nullopt, R::unknown, 0},  // the endpoint may not exist
      {200, "none", std::nullopt, R::unknown, 0},
      {404, "done", std::nullopt, R::unknown, 0},
      {500, "none", std::nullopt, R::unknown, 0},
      {503, std::nullopt, std::nullopt, R::unknown, 0},
  };
  for (const Row& r : rows) {
    const StatusAnswer a = read_status_answer(r.status, r.outcome, r.original);
    EXPECT_EQ(a.reading, r.reading) << r.status << " " << r.outcome.value_or("-");
    EXPECT_EQ(a.original_status, r.original_status) << r.status;
  }
}

}  // namespace
}  // namespace idem::gateway
