#include "base/status.h"

#include <gtest/gtest.h>

#include "base/config.h"
#include "base/dims.h"
#include "base/dtype.h"

namespace parex {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgument("odd " + std::to_string(x));
  return x / 2;
}

Status UseHalf(int x, int* out) {
  PAREX_ASSIGN_OR_RETURN(*out, Half(x));
  return Status::Ok();
}

TEST(StatusTest, OkAndErrorsCarryCodeAndMessage) {
  EXPECT_TRUE(Status::Ok().ok());
  Status s = NotFound("var 'w'");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NotFound: var 'w'");
  EXPECT_EQ(s.WithContext("op #1 'mul'").message(), "op #1 'mul': var 'w'");
  EXPECT_TRUE(Status::Ok().WithContext("x").ok());
}

TEST(StatusTest, AssignOrReturnPropagates) {
  int out = -1;
  EXPECT_TRUE(UseHalf(8, &out).ok());
  EXPECT_EQ(out, 4);
  Status s = UseHalf(3, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "odd 3");
}

TEST(StatusDeathTest, ValueOfErrorAborts) {
  StatusOr<int> bad = Internal("boom");
  EXPECT_DEATH((void)bad.value(), "boom");
}

TEST(DTypeTest, SizesAndNamesMatchPaddleNumbers) {
  EXPECT_EQ(static_cast<int>(DType::kFP32), 5);
  EXPECT_EQ(static_cast<int>(DType::kUInt8), 20);
  EXPECT_EQ(SizeOf(DType::kFP64), 8u);
  EXPECT_EQ(SizeOf(DType::kBF16), 2u);
  EXPECT_STREQ(DTypeName(DType::kInt64), "int64");
  EXPECT_TRUE(IsElementType(22));
  EXPECT_FALSE(IsElementType(7));  // LOD_TENSOR is a var type
  EXPECT_FALSE(IsElementType(-1));
}

TEST(DimsTest, NumelAndUnknownExtents) {
  EXPECT_EQ(Numel({2, 3, 4}), 24);
  EXPECT_EQ(Numel({}), 1);
  EXPECT_EQ(Numel({-1, 3}), -1);
  EXPECT_EQ(DimsToString({-1, 13}), "[-1,13]");
  EXPECT_TRUE(ExtentsAgree(-1, 7));
  EXPECT_FALSE(ExtentsAgree(3, 7));
}

TEST(ConfigTest, DefaultsAndEnvironment) {
  ::unsetenv("PAREX_SEED");
  EXPECT_EQ(GetConfigInt("PAREX_SEED"), 0);
  ::setenv("PAREX_SEED", "42", 1);
  EXPECT_EQ(GetConfigInt("PAREX_SEED"), 42);
  ::setenv("PAREX_SEED", "x42", 1);
  EXPECT_EQ(GetConfigInt("PAREX_SEED"), 0);
  ::unsetenv("PAREX_SEED");
  bool declared = false;
  for (const auto& v : ConfigVars())
    declared |= std::string(v.name) == "CPU_NUM";
  EXPECT_TRUE(declared);
}

}  // namespace
}  // namespace parex
