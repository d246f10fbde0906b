#include "halite/common/result.h"

#include <gtest/gtest.h>

namespace halite {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return Error::InvalidArgument("odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  HALITE_ASSIGN_OR_RETURN(int half, Half(x));
  HALITE_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

Status CheckEven(int x) {
  HALITE_RETURN_IF_ERROR(Half(x));
  return OkStatus();
}

TEST(ResultTest, ValueAndErrorPropagate) {
  EXPECT_EQ(*Quarter(8), 2);
  auto bad = Quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().ToString(), "INVALID_ARGUMENT: odd");
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_FALSE(CheckEven(3).ok());
}

TEST(ResultTest, WithContextPrefixesMessage) {
  Error e = Error::NotFound("jid 1").WithContext("lookup");
  EXPECT_EQ(e.message, "lookup: jid 1");
  EXPECT_EQ(e.code, ErrorCode::kNotFound);
}

TEST(ResultTest, ValueOnErrorIsABug) {
  Result<int> r = Error::Internal("x");
  EXPECT_DEATH((void)r.value(), "value\\(\\) on error");
}

}  // namespace
}  // namespace halite
