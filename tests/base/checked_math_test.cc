#include "base/checked_math.h"

#include <gtest/gtest.h>

#include "base/dims.h"

namespace parex {
namespace {

TEST(CheckedMathTest, NumelOfOrdinaryShapes) {
  EXPECT_EQ(*CheckedNumel({}, "x"), 1);
  EXPECT_EQ(*CheckedNumel({64, 784}, "x"), 64 * 784);
  EXPECT_EQ(*CheckedNumel({0, int64_t{1} << 40}, "x"), 0);
  EXPECT_EQ(*CheckedNumel({int64_t{1} << 24, int64_t{1} << 24}, "x"),
            int64_t{1} << 48);
}

TEST(CheckedMathTest, ProductsThatWrapAreRefusedNamingTheShape) {
  // 2^32 * 2^32 wraps int64 to 0: the "enough bytes?" test would pass.
  StatusOr<int64_t> n =
      CheckedNumel({int64_t{1} << 32, int64_t{1} << 32}, "'a.npy'");
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(n.status().message().find("'a.npy'"), std::string::npos);
  EXPECT_NE(n.status().message().find("[4294967296,4294967296]"),
            std::string::npos);
  EXPECT_FALSE(CheckedNumel({int64_t{1} << 24, int64_t{1} << 24, 2}, "x").ok());
  EXPECT_FALSE(CheckedNumel({INT64_MAX, 0}, "x").ok());  // an extent above 2^48
  EXPECT_FALSE(CheckedNumel({-1, 4}, "x").ok());
  EXPECT_FALSE(CheckedNumel(std::vector<int64_t>(10, 1), "x").ok());  // rank 10
}

TEST(CheckedMathTest, Bytes) {
  EXPECT_EQ(*CheckedBytes(10, 4, "x"), 40u);
  EXPECT_FALSE(CheckedBytes(int64_t{1} << 48, 8, "x").ok());  // 2 PiB
  EXPECT_FALSE(CheckedBytes(-1, 4, "x").ok());
}

TEST(CheckedMathTest, NumelSaturatesInsteadOfWrapping) {
  EXPECT_EQ(Numel({int64_t{1} << 32, int64_t{1} << 32}), kNumelOverflow);
  EXPECT_EQ(Numel({int64_t{1} << 62, 4, 0}), 0);
  EXPECT_EQ(Numel({-1, 4}), -1);
  EXPECT_EQ(Numel({3, 4}), 12);
}

}  // namespace
}  // namespace parex
