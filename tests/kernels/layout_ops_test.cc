// tile, flip, roll, index_select (kernels/cpu/layout_kernels.cc), assign_value
// and linspace against PaddlePaddle 2.6.2 (tests/kernels/paddle_goldens/
// layout_ops.json: outputs, gradient ops and their values), the gradients
// against finite differences, and bad indices and attributes named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "tests/kernels/op_tester.h"
#include "tests/kernels/paddle_golden.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(LayoutOpsTest, MatchPaddleGoldens) {
  const std::vector<std::pair<std::string, int>> counts = {
      {"tile", 3},         {"flip", 3},         {"roll", 3},
      {"index_select", 3}, {"assign_value", 2}, {"linspace", 3}};
  for (const auto& [op, n] : counts) {
    SCOPED_TRACE(op);
    EXPECT_EQ(CheckPaddleGoldens(op, {}, "layout_ops.json"), n);
  }
}

TEST(LayoutOpsTest, GradientsMatchFiniteDifferences) {
  uint32_t seed = 60;
  {
    OpTester t("tile");
    t.Input("X", DistinctRandomTensor({2, 3}, -1, 1, seed++))
        .Output("Out")
        .Attr("repeat_times", std::vector<int>{2, 1, 2});
    EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
  }
  for (const std::vector<int64_t>& axis :
       {std::vector<int64_t>{1}, std::vector<int64_t>{}}) {
    OpTester t("roll");
    t.Input("X", DistinctRandomTensor({2, 3, 4}, -1, 1, seed++))
        .Output("Out")
        .Attr("shifts", std::vector<int64_t>{axis.empty() ? 7 : -2})
        .Attr("axis", axis);
    EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
  }
  {
    OpTester t("index_select");
    t.Input("X", DistinctRandomTensor({3, 4}, -1, 1, seed++))
        .Input("Index", MakeTensor<int64_t>({4}, {2, 0, 2, 1}))
        .Output("Out")
        .Attr("dim", 1);
    EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
  }
}

TEST(LayoutOpsTest, BadIndicesAndAttributesAreNamed) {
  OpTester select("index_select");
  select.Input("X", DistinctRandomTensor({3, 4}, -1, 1, 1))
      .Input("Index", MakeTensor<int64_t>({2}, {0, 4}))
      .Output("Out")
      .Attr("dim", 1);
  Status s = select.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("Index[1] = 4 is out of range [0, 4)"));
  OpTester flip("flip");
  flip.Input("X", DistinctRandomTensor({3, 4}, -1, 1, 2))
      .Output("Out")
      .Attr("axis", std::vector<int>{2});
  EXPECT_THAT(flip.Run().message(), HasSubstr("axis 2 is out of range"));
  OpTester tile("tile");
  tile.Input("X", DistinctRandomTensor({3}, -1, 1, 3))
      .Output("Out")
      .Attr("repeat_times", std::vector<int>{0});
  EXPECT_THAT(tile.Run().message(), HasSubstr("repeat count 0"));
  OpTester strided("strided_slice");
  strided.Input("Input", DistinctRandomTensor({3, 4}, -1, 1, 4))
      .Output("Out")
      .Attr("axes", std::vector<int>{1})
      .Attr("starts", std::vector<int>{0})
      .Attr("ends", std::vector<int>{4})
      .Attr("strides", std::vector<int>{0});
  EXPECT_THAT(strided.Run().message(), HasSubstr("a stride of 0"));
  OpTester assign("assign_value");
  assign.Output("Out")
      .Attr("shape", std::vector<int>{2, 2})
      .Attr("dtype", static_cast<int>(DType::kFP32))
      .Attr("fp32_values", std::vector<float>{1, 2, 3});
  EXPECT_THAT(assign.Run().message(),
              HasSubstr("fp32_values has 3 values for 4 elements"));
}

// Gradient ops fed an Out@GRAD that does not match X (a hostile program):
// an error naming the op, never a read or write outside a buffer.
TEST(LayoutOpsTest, MismatchedGradientsAreErrors) {
  struct Bad {
    const char* type;
    std::function<void(OpTester&)> setup;
  };
  const Tensor x = DistinctRandomTensor({3, 4}, -1, 1, 9);
  const Tensor small = DistinctRandomTensor({2}, -1, 1, 10);
  const std::vector<Bad> bad = {
      {"index_select_grad",
       [&](OpTester& t) {
         t.Input("X", x)
             .Input("Index", MakeTensor<int64_t>({2}, {0, 1}))
             .Input("Out@GRAD", small)
             .Attr("dim", 1);
       }},
      {"roll_grad",
       [&](OpTester& t) {
         t.Input("X", x)
             .Input("Out@GRAD", small)
             .Attr("shifts", std::vector<int64_t>{1});
       }},
      {"frobenius_norm_grad",
       [&](OpTester& t) {
         t.Input("X", x)
             .Input("Out", small)
             .Input("Out@GRAD", small)
             .Attr("dim", std::vector<int>{0, 1});
       }},
      {"prelu_grad",
       [&](OpTester& t) {
         t.Input("X", x)
             .Input("Alpha", MakeTensor<double>({1}, {0.1}))
             .Input("Out@GRAD", small);
       }},
  };
  for (const Bad& b : bad) {
    OpTester t(b.type);
    b.setup(t);
    t.Output("X@GRAD");
    Status s = t.Run();
    EXPECT_FALSE(s.ok()) << b.type;
    EXPECT_THAT(s.message(), HasSubstr(b.type)) << s.ToString();
  }
}

}  // namespace
}  // namespace parex::testing
