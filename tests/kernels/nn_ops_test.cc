// p_norm, frobenius_norm and reduce_amax (kernels/cpu/norm_kernels.cc),
// prelu, pixel_shuffle, argsort, max_pool2d_with_index and strided_slice
// (kernels/cpu/layout_kernels.cc; more_nn.json), group_norm and
// instance_norm (kernels/cpu/group_norm_kernels.cc; group_norm.json)
// against PaddlePaddle 2.6.2 (tests/kernels/paddle_goldens/nn_ops.json:
// outputs, gradient ops and values; amax with tied maxima), and the norms'
// gradients against finite differences.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/kernels/op_tester.h"
#include "tests/kernels/paddle_golden.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(NormOpsTest, MatchPaddleGoldens) {
  EXPECT_EQ(CheckPaddleGoldens("p_norm", {}, "nn_ops.json"), 3);
  EXPECT_EQ(CheckPaddleGoldens("frobenius_norm", {}, "nn_ops.json"), 2);
  EXPECT_EQ(CheckPaddleGoldens("reduce_amax", {}, "nn_ops.json"), 2);
  EXPECT_EQ(CheckPaddleGoldens("prelu", {}, "nn_ops.json"), 3);
  EXPECT_EQ(CheckPaddleGoldens("pixel_shuffle", {}, "nn_ops.json"), 1);
  EXPECT_EQ(CheckPaddleGoldens("argsort", {}, "more_nn.json"), 2);
  EXPECT_EQ(CheckPaddleGoldens("max_pool2d_with_index", {}, "more_nn.json"), 2);
  EXPECT_EQ(CheckPaddleGoldens("strided_slice", {}, "more_nn.json"), 3);
  EXPECT_EQ(CheckPaddleGoldens("group_norm", {}, "group_norm.json"), 3);
  EXPECT_EQ(CheckPaddleGoldens("instance_norm", {}, "group_norm.json"), 2);
}

TEST(NormOpsTest, GroupAndInstanceNormGradientsMatchFiniteDifferences) {
  uint32_t seed = 90;
  for (const char* layout : {"NCHW", "NHWC"}) {
    seed += 3;
    OpTester t("group_norm");
    const Dims x =
        std::string(layout) == "NCHW" ? Dims{2, 4, 3, 2} : Dims{2, 3, 2, 4};
    t.Input("X", DistinctRandomTensor(x, -2, 2, seed))
        .Input("Scale", DistinctRandomTensor({4}, 0.5, 1.5, seed + 1))
        .Input("Bias", DistinctRandomTensor({4}, -1, 1, seed + 2))
        .Output("Y")
        .Output("Mean")
        .Output("Variance")
        .Attr("groups", 2)
        .Attr("data_layout", std::string(layout));
    EXPECT_THAT(t.CheckGrad({"X", "Scale", "Bias"}, {"Y"}), IsEmpty())
        << layout;
  }
  OpTester in("instance_norm");
  seed += 3;
  in.Input("X", DistinctRandomTensor({2, 3, 5}, -2, 2, seed))
      .Input("Scale", DistinctRandomTensor({3}, 0.5, 1.5, seed + 1))
      .Input("Bias", DistinctRandomTensor({3}, -1, 1, seed + 2))
      .Output("Y")
      .Output("SavedMean")
      .Output("SavedVariance");
  EXPECT_THAT(in.CheckGrad({"X", "Scale", "Bias"}, {"Y"}), IsEmpty());
  OpTester bad("group_norm");
  bad.Input("X", DistinctRandomTensor({2, 6, 3}, -2, 2, seed++))
      .Output("Y")
      .Attr("groups", 4);
  EXPECT_THAT(bad.Run().message(), HasSubstr("groups 4 does not divide the 6"));
}

TEST(NormOpsTest, GradientsMatchFiniteDifferences) {
  uint32_t seed = 80;
  for (float p : {2.0f, 1.5f, 3.0f}) {
    OpTester t("p_norm");
    t.Input("X", DistinctRandomTensor({3, 4}, 0.3, 2, seed++))
        .Output("Out")
        .Attr<float>("porder", p)
        .Attr("axis", 1);
    EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty()) << p;
  }
  OpTester f("frobenius_norm");
  f.Input("X", DistinctRandomTensor({2, 3, 4}, -2, 2, seed++))
      .Output("Out")
      .Attr("dim", std::vector<int>{0, 2});
  EXPECT_THAT(f.CheckGrad({"X"}, {"Out"}), IsEmpty());
  OpTester zero("p_norm");
  zero.Input("X", DistinctRandomTensor({3}, 0.3, 2, seed++))
      .Output("Out")
      .Attr<float>("porder", 0.0f);
  EXPECT_THAT(zero.Run().message(), HasSubstr("porder 0"));
}

}  // namespace
}  // namespace parex::testing
