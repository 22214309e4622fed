// Paddle 2.x ops of docs/paddle_ops.md added together: comparisons and logic
// broadcasting both ways, pow, fill_any_like, size, log_softmax and
// logsumexp, against PaddlePaddle 2.6.2's outputs and gradient ops
// (tests/kernels/paddle_goldens/more_ops.json), and the differentiable ones
// against finite differences.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/kernels/op_tester.h"
#include "tests/kernels/paddle_golden.h"

namespace parex::testing {
namespace {

using ::testing::IsEmpty;

TEST(MoreOpsTest, MatchPaddleGoldens) {
  const std::vector<std::pair<std::string, int>> counts = {
      {"greater_than", 1},  {"greater_equal", 1}, {"less_equal", 1},
      {"not_equal", 1},     {"logical_and", 1},   {"logical_or", 1},
      {"logical_xor", 1},   {"logical_not", 1},   {"pow", 3},
      {"fill_any_like", 3}, {"size", 1},          {"log_softmax", 2},
      {"logsumexp", 3}};
  for (const auto& [op, n] : counts) {
    SCOPED_TRACE(op);
    EXPECT_EQ(CheckPaddleGoldens(op, {}, "more_ops.json"), n);
  }
}

TEST(MoreOpsTest, GradientsMatchFiniteDifferences) {
  uint32_t seed = 40;
  {
    OpTester t("pow");
    t.Input("X", DistinctRandomTensor({3, 4}, 0.5, 2, seed++))
        .Output("Out")
        .Attr<float>("factor", 2.5f);
    EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
  }
  for (int axis : {-1, 0, 1}) {
    OpTester t("log_softmax");
    t.Input("X", DistinctRandomTensor({2, 3, 4}, -2, 2, seed++))
        .Output("Out")
        .Attr("axis", axis);
    EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty()) << axis;
  }
  for (const std::vector<int>& axes :
       {std::vector<int>{1}, std::vector<int>{0, 2}, std::vector<int>{-1}}) {
    OpTester t("logsumexp");
    t.Input("X", DistinctRandomTensor({2, 3, 4}, -2, 2, seed++))
        .Output("Out")
        .Attr("axis", axes);
    EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
  }
}

}  // namespace
}  // namespace parex::testing
