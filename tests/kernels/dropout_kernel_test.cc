// Tests of dropout and dropout_grad (kernels/cpu/dropout_kernel.cc, schema in
// graph/ir/ops/norm_ops.cc): both implementations in training and inference,
// the mask's rate and seeding, gradients against finite differences (with a
// fixed seed, so every forward run draws the same mask), attribute errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/kernels/op_tester.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

const char* const kDowngrade = "downgrade_in_infer";
const char* const kUpscale = "upscale_in_train";

OpTester& Dropout(OpTester& t, Tensor x, float p, const std::string& mode) {
  return t.Input("X", std::move(x))
      .Output("Out")
      .Output("Mask")
      .Attr("dropout_prob", p)
      .Attr("dropout_implementation", mode);
}

TEST(DropoutKernelTest, InferenceScalesOrPassesThrough) {
  Tensor x = MakeTensor<double>({2, 2}, {1, -2, 3, 4});
  OpTester down("dropout");
  Dropout(down, x, 0.25f, kDowngrade).Attr("is_test", true);
  ASSERT_TRUE(down.Run().ok());
  EXPECT_EQ(CompareTensors(down.Out("Out"),
                           MakeTensor<double>({2, 2}, {0.75, -1.5, 2.25, 3}),
                           1e-12, 0),
            "");
  OpTester up("dropout");
  Dropout(up, x, 0.25f, kUpscale).Attr("is_test", true);
  ASSERT_TRUE(up.Run().ok());
  EXPECT_EQ(CompareTensors(up.Out("Out"), x, 0, 0), "");
}

// Checks Out against X and Mask; returns the fraction of dropped elements.
double CheckTraining(OpTester& t, const Tensor& x, double kept_scale) {
  const Tensor& out = t.Out("Out");
  const Tensor& mask = t.Out("Mask");
  EXPECT_EQ(mask.dtype(), DType::kUInt8);
  EXPECT_EQ(mask.dims(), x.dims());
  int64_t dropped = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const uint8_t m = mask.data<uint8_t>()[i];
    EXPECT_TRUE(m == 0 || m == 1);
    const double want = m ? x.data<float>()[i] * kept_scale : 0.0;
    EXPECT_NEAR(out.data<float>()[i], want, 1e-6);
    dropped += m == 0;
  }
  return static_cast<double>(dropped) / x.numel();
}

TEST(DropoutKernelTest, TrainingDowngradeKeepsValues) {
  Tensor x = RandomTensor({40, 50}, 0.5, 1.5, 1, DType::kFP32);
  OpTester t("dropout");
  Dropout(t, x, 0.3f, kDowngrade);
  ASSERT_TRUE(t.Run().ok());
  EXPECT_NEAR(CheckTraining(t, x, 1.0), 0.3, 0.05);
}

TEST(DropoutKernelTest, TrainingUpscaleDividesByKeepRate) {
  Tensor x = RandomTensor({40, 50}, 0.5, 1.5, 2, DType::kFP32);
  OpTester t("dropout");
  Dropout(t, x, 0.6f, kUpscale);
  ASSERT_TRUE(t.Run().ok());
  EXPECT_NEAR(CheckTraining(t, x, 1 / 0.4), 0.6, 0.05);
}

TEST(DropoutKernelTest, ProbabilityOneAndZero) {
  Tensor x = RandomTensor({3, 4}, 0.5, 1.5, 3, DType::kFP32);
  OpTester all("dropout");
  Dropout(all, x, 1.0f, kUpscale);
  ASSERT_TRUE(all.Run().ok());
  EXPECT_EQ(CheckTraining(all, x, 0.0), 1.0);
  OpTester none("dropout");
  Dropout(none, x, 0.0f, kDowngrade);
  ASSERT_TRUE(none.Run().ok());
  EXPECT_EQ(CheckTraining(none, x, 1.0), 0.0);
}

std::vector<uint8_t> MaskOf(int seed, bool fix_seed) {
  OpTester t("dropout");
  Dropout(t, RandomTensor({64}, 0.5, 1.5, 4, DType::kFP32), 0.5f, kDowngrade)
      .Attr("fix_seed", fix_seed)
      .Attr("seed", seed);
  EXPECT_TRUE(t.Run().ok());
  return ToVector<uint8_t>(t.Out("Mask"));
}

TEST(DropoutKernelTest, FixedSeedRepeatsTheMask) {
  EXPECT_EQ(MaskOf(17, true), MaskOf(17, true));
  EXPECT_NE(MaskOf(17, true), MaskOf(18, true));
}

TEST(DropoutKernelTest, UnfixedSeedDrawsANewMaskPerRun) {
  OpTester t("dropout");
  Dropout(t, RandomTensor({64}, 0.5, 1.5, 5, DType::kFP32), 0.5f, kDowngrade);
  ASSERT_TRUE(t.Run().ok());
  std::vector<uint8_t> first = ToVector<uint8_t>(t.Out("Mask"));
  ASSERT_TRUE(t.Run().ok());
  EXPECT_NE(first, ToVector<uint8_t>(t.Out("Mask")));
}

TEST(DropoutKernelTest, SeedInputOverridesAttributes) {
  auto run = [](int32_t seed) {
    OpTester t("dropout");
    Dropout(t, RandomTensor({64}, 0.5, 1.5, 6, DType::kFP32), 0.5f, kUpscale)
        .Input("Seed", MakeTensor<int32_t>({1}, {seed}));
    EXPECT_TRUE(t.Run().ok());
    return ToVector<uint8_t>(t.Out("Mask"));
  };
  EXPECT_EQ(run(9), run(9));
  EXPECT_EQ(run(9), MaskOf(9, true));
}

TEST(DropoutKernelTest, Gradients) {
  for (const char* mode : {kDowngrade, kUpscale}) {
    SCOPED_TRACE(mode);
    OpTester t("dropout");
    Dropout(t, RandomTensor({4, 5}, -1, 1, 7), 0.4f, mode)
        .Attr("fix_seed", true)
        .Attr("seed", 123);
    EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
  }
}

TEST(DropoutKernelTest, ProbabilityOutsideUnitIntervalIsAnError) {
  OpTester t("dropout");
  Dropout(t, RandomTensor({4}, -1, 1, 1), 1.5f, kDowngrade);
  Status s = t.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("'dropout'"));
  EXPECT_THAT(s.message(), HasSubstr("dropout_prob"));
}

TEST(DropoutKernelTest, UnknownImplementationIsAnError) {
  OpTester t("dropout");
  Dropout(t, RandomTensor({4}, -1, 1, 1), 0.5f, "sometimes");
  Status s = t.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("dropout_implementation"));
}

}  // namespace
}  // namespace parex::testing
