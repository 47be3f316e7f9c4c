// Status's formatting (include/idem/status.h, src/core/status.cpp).
#include "idem/status.h"

#include <gtest/gtest.h>

namespace idem {
namespace {

TEST(Status, ToString) {
  EXPECT_EQ(Status().to_string(), "ok");
  EXPECT_EQ(unavailable("sqlite: database is locked").to_string(), "unavailable: sqlite: database is locked");
  EXPECT_EQ(invalid_argument("x").to_string(), "invalid_argument: x");
  EXPECT_EQ(deadline_exceeded("").to_string(), "deadline_exceeded");
  EXPECT_EQ(failed_precondition("read-only").to_string(), "failed_precondition: read-only");
  EXPECT_EQ(internal_error("bug").to_string(), "internal: bug");
  EXPECT_STREQ(to_string(StatusCode::ok), "ok");
  EXPECT_STREQ(to_string(StatusCode::internal), "internal");
}

}  // namespace
}  // namespace idem
