#include "common/status.h"

#include <gtest/gtest.h>

namespace capplan {
namespace {

Result<int> Half(int x) {
  if (x % 2) return Status::Invalid("odd");
  return x / 2;
}

Status UseHalf(int x, int* out) {
  CAPPLAN_ASSIGN_OR_RETURN(*out, Half(x));
  return Status::Ok();
}

TEST(Status, ExitCodes) {
  EXPECT_EQ(Status::Ok().ExitCode(), 0);
  EXPECT_EQ(Status::Usage("x").ExitCode(), 2);
  EXPECT_EQ(Status::NotFound("x").ExitCode(), 2);
  EXPECT_EQ(Status::Invalid("x").ExitCode(), 1);
  EXPECT_EQ(Status::Io("x").ExitCode(), 1);
}

TEST(Status, AssignOrReturn) {
  int v = 0;
  EXPECT_TRUE(UseHalf(8, &v).ok());
  EXPECT_EQ(v, 4);
  Status s = UseHalf(3, &v);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "odd");
  EXPECT_EQ(s.WithPrefix("f.json").message(), "f.json: odd");
}

}  // namespace
}  // namespace capplan
