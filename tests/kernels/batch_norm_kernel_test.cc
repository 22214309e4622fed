// Tests of batch_norm and batch_norm_grad (kernels/cpu/batch_norm_kernel.cc,
// schema in graph/ir/ops/norm_ops.cc): statistics and outputs against loops
// written here, the in-place running-statistics update, inference mode with
// is_test stored as INT, gradients against finite differences, shape errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "graph/ir/op_schema.h"
#include "graph/ir/validate.h"
#include "kernels/device_context.h"
#include "kernels/op_runner.h"
#include "tests/kernels/op_tester.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr double kEpsilon = 1e-5;

// Batch statistics of X [N, C, S] (S = product of the spatial dims) and the
// normalised output, by definition.
struct Reference {
  std::vector<double> mean, variance, inv_std, y;
};

Reference Normalize(const Tensor& x, const Tensor& scale, const Tensor& bias) {
  const int n = x.dim(0), c = x.dim(1), s = x.numel() / (n * c);
  const double* xv = x.data<double>();
  Reference r;
  for (int ch = 0; ch < c; ++ch) {
    double sum = 0;
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < s; ++j) sum += xv[(i * c + ch) * s + j];
    }
    const double mean = sum / (n * s);
    double sq = 0;
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < s; ++j) {
        const double d = xv[(i * c + ch) * s + j] - mean;
        sq += d * d;
      }
    }
    r.mean.push_back(mean);
    r.variance.push_back(sq / (n * s));  // biased, as Fluid
    r.inv_std.push_back(1 / std::sqrt(sq / (n * s) + kEpsilon));
  }
  r.y.resize(x.numel());
  for (int i = 0; i < n; ++i) {
    for (int ch = 0; ch < c; ++ch) {
      for (int j = 0; j < s; ++j) {
        const int k = (i * c + ch) * s + j;
        r.y[k] =
            (xv[k] - r.mean[ch]) * r.inv_std[ch] * scale.data<double>()[ch] +
            bias.data<double>()[ch];
      }
    }
  }
  return r;
}

Tensor Vec(const std::vector<double>& v) {
  return MakeTensor<double>({static_cast<int64_t>(v.size())}, v);
}

OpTester& BatchNorm(OpTester& t, Tensor x, int c, uint32_t seed) {
  return t.Input("X", std::move(x))
      .Input("Scale", RandomTensor({c}, 0.5, 1.5, seed + 1))
      .Input("Bias", RandomTensor({c}, -1, 1, seed + 2))
      .Input("Mean", RandomTensor({c}, -1, 1, seed + 3))
      .Input("Variance", RandomTensor({c}, 0.5, 2, seed + 4))
      .Output("Y")
      .Output("MeanOut")
      .Output("VarianceOut")
      .Output("SavedMean")
      .Output("SavedVariance");
}

void ExpectTraining(const Dims& dims) {
  SCOPED_TRACE(DimsToString(dims));
  Tensor x = RandomTensor(dims, -2, 3, 1);
  const int c = static_cast<int>(dims[1]);
  OpTester t("batch_norm");
  BatchNorm(t, x, c, 10).Attr("momentum", 0.8f);
  ASSERT_TRUE(t.Run().ok());
  const Tensor& scale = *t.scope().FindVar("Scale_0")->GetTensor();
  const Tensor& bias = *t.scope().FindVar("Bias_0")->GetTensor();
  const Tensor& mean0 = *t.scope().FindVar("Mean_0")->GetTensor();
  const Tensor& var0 = *t.scope().FindVar("Variance_0")->GetTensor();
  Reference r = Normalize(x, scale, bias);
  // momentum is a FLOAT attribute: the update uses its float value.
  const double m = 0.8f;
  std::vector<double> mean_out, var_out;
  for (int ch = 0; ch < c; ++ch) {
    mean_out.push_back(m * mean0.data<double>()[ch] + (1 - m) * r.mean[ch]);
    var_out.push_back(m * var0.data<double>()[ch] + (1 - m) * r.variance[ch]);
  }
  EXPECT_EQ(
      CompareTensors(t.Out("Y"), MakeTensor<double>(dims, r.y), 1e-12, 1e-10),
      "");
  EXPECT_EQ(CompareTensors(t.Out("SavedMean"), Vec(r.mean), 1e-12, 1e-12), "");
  EXPECT_EQ(
      CompareTensors(t.Out("SavedVariance"), Vec(r.inv_std), 1e-12, 1e-10), "");
  EXPECT_EQ(CompareTensors(t.Out("MeanOut"), Vec(mean_out), 1e-12, 1e-12), "");
  EXPECT_EQ(CompareTensors(t.Out("VarianceOut"), Vec(var_out), 1e-12, 1e-12),
            "");
}

TEST(BatchNormKernelTest, TrainingNchw4D) { ExpectTraining({3, 2, 2, 3}); }
TEST(BatchNormKernelTest, Training2D) { ExpectTraining({5, 3}); }
TEST(BatchNormKernelTest, Training5D) { ExpectTraining({2, 2, 2, 1, 3}); }

TEST(BatchNormKernelTest, TrainingNhwcMatchesTransposedNchw) {
  // X NHWC [2,2,3,C=2] built from an NCHW tensor [2,2,2,3].
  Tensor nchw = RandomTensor({2, 2, 2, 3}, -2, 3, 2);
  Tensor nhwc(DType::kFP64, {2, 2, 3, 2});
  auto nchw_index = [](int n, int c, int h, int w) {
    return ((n * 2 + c) * 2 + h) * 3 + w;
  };
  auto nhwc_index = [](int n, int c, int h, int w) {
    return ((n * 2 + h) * 3 + w) * 2 + c;
  };
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 2; ++c)
      for (int h = 0; h < 2; ++h)
        for (int w = 0; w < 3; ++w)
          nhwc.data<double>()[nhwc_index(n, c, h, w)] =
              nchw.data<double>()[nchw_index(n, c, h, w)];
  OpTester t("batch_norm");
  BatchNorm(t, nhwc, 2, 20).Attr("data_layout", std::string("NHWC"));
  ASSERT_TRUE(t.Run().ok());
  Reference r = Normalize(nchw, *t.scope().FindVar("Scale_0")->GetTensor(),
                          *t.scope().FindVar("Bias_0")->GetTensor());
  const double* y = t.Out("Y").data<double>();
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 2; ++c)
      for (int h = 0; h < 2; ++h)
        for (int w = 0; w < 3; ++w)
          EXPECT_NEAR(y[nhwc_index(n, c, h, w)], r.y[nchw_index(n, c, h, w)],
                      1e-10);
  EXPECT_EQ(CompareTensors(t.Out("SavedMean"), Vec(r.mean), 1e-12, 1e-12), "");
}

TEST(BatchNormKernelTest, InferenceUsesRunningStatisticsWithIntIsTest) {
  OpTester t("batch_norm");
  t.Input("X", MakeTensor<double>({2, 2}, {1, 2, 3, 4}))
      .Input("Scale", Vec({2, 1}))
      .Input("Bias", Vec({0, 1}))
      .Input("Mean", Vec({1, 2}))
      .Input("Variance", Vec({4 - kEpsilon, 1 - kEpsilon}))
      .Output("Y")
      .Output("MeanOut")
      .Output("VarianceOut")
      .Output("SavedMean")
      .Output("SavedVariance")
      .Attr("is_test", 1);  // INT, as older Paddle files store it
  ASSERT_TRUE(t.Run().ok());
  // y = (x - mean) / sqrt(var + eps) * scale + bias, per column.
  EXPECT_EQ(CompareTensors(t.Out("Y"), MakeTensor<double>({2, 2}, {0, 1, 2, 3}),
                           1e-12, 0),
            "");
  EXPECT_EQ(CompareTensors(t.Out("MeanOut"), Vec({1, 2}), 0, 0), "");
  EXPECT_EQ(CompareTensors(t.Out("VarianceOut"),
                           Vec({4 - kEpsilon, 1 - kEpsilon}), 0, 0),
            "");
}

TEST(BatchNormKernelTest, UpdatesRunningStatisticsInPlace) {
  // As in Fluid programs: MeanOut is the variable Mean, VarianceOut is
  // Variance.
  Program program;
  Block& block = program.global_block();
  Scope scope;
  auto feed = [&](const std::string& name, Tensor value) {
    VarDesc* v = block.Var(name);
    v->SetDType(value.dtype());
    v->SetDims(value.dims());
    *scope.Var(name)->GetMutableTensor() = std::move(value);
  };
  Tensor x = MakeTensor<double>({4, 1}, {1, 2, 3, 6});  // mean 3, var 3.5
  feed("x", x);
  feed("scale", Vec({1}));
  feed("bias", Vec({0}));
  feed("mean", Vec({1}));
  feed("variance", Vec({2}));
  for (const char* name : {"y", "saved_mean", "saved_variance"})
    block.Var(name);
  OpDesc* op = block.AppendOp("batch_norm");
  op->SetInput("X", {"x"});
  op->SetInput("Scale", {"scale"});
  op->SetInput("Bias", {"bias"});
  op->SetInput("Mean", {"mean"});
  op->SetInput("Variance", {"variance"});
  op->SetOutput("Y", {"y"});
  op->SetOutput("MeanOut", {"mean"});
  op->SetOutput("VarianceOut", {"variance"});
  op->SetOutput("SavedMean", {"saved_mean"});
  op->SetOutput("SavedVariance", {"saved_variance"});
  ASSERT_TRUE(ValidateProgram(program).ok());
  CpuDeviceContext device;
  const double m = 0.9f;  // the default momentum, a FLOAT attribute
  ASSERT_TRUE(RunOp(*op, &scope, &device).ok());
  EXPECT_DOUBLE_EQ(scope.FindVar("mean")->GetTensor()->data<double>()[0],
                   m * 1 + (1 - m) * 3);
  EXPECT_DOUBLE_EQ(scope.FindVar("variance")->GetTensor()->data<double>()[0],
                   m * 2 + (1 - m) * 3.5);
  // A second step starts from the updated statistics.
  ASSERT_TRUE(RunOp(*op, &scope, &device).ok());
  EXPECT_DOUBLE_EQ(scope.FindVar("mean")->GetTensor()->data<double>()[0],
                   m * (m * 1 + (1 - m) * 3) + (1 - m) * 3);
}

TEST(BatchNormKernelTest, Fp32Training) {
  OpTester t("batch_norm");
  t.Input("X", RandomTensor({4, 3, 2, 2}, -2, 3, 5, DType::kFP32))
      .Input("Scale", RandomTensor({3}, 0.5, 1.5, 6, DType::kFP32))
      .Input("Bias", RandomTensor({3}, -1, 1, 7, DType::kFP32))
      .Input("Mean", RandomTensor({3}, -1, 1, 8, DType::kFP32))
      .Input("Variance", RandomTensor({3}, 0.5, 2, 9, DType::kFP32))
      .Output("Y")
      .Output("MeanOut")
      .Output("VarianceOut")
      .Output("SavedMean")
      .Output("SavedVariance");
  ASSERT_TRUE(t.Run().ok());
  Reference r =
      Normalize(RandomTensor({4, 3, 2, 2}, -2, 3, 5),
                RandomTensor({3}, 0.5, 1.5, 6), RandomTensor({3}, -1, 1, 7));
  EXPECT_EQ(CompareTensors(t.Out("Y"), MakeTensor<double>({4, 3, 2, 2}, r.y),
                           1e-5, 1e-5),
            "");
}

TEST(BatchNormKernelTest, GradientTraining4D) {
  OpTester t("batch_norm");
  BatchNorm(t, RandomTensor({2, 3, 2, 2}, -2, 3, 30), 3, 30);
  EXPECT_THAT(t.CheckGrad({"X", "Scale", "Bias"}, {"Y"}), IsEmpty());
}

TEST(BatchNormKernelTest, GradientTraining2D) {
  OpTester t("batch_norm");
  BatchNorm(t, RandomTensor({6, 4}, -2, 3, 40), 4, 40);
  EXPECT_THAT(t.CheckGrad({"X", "Scale", "Bias"}, {"Y"}), IsEmpty());
}

TEST(BatchNormKernelTest, GradientTrainingNhwc) {
  OpTester t("batch_norm");
  BatchNorm(t, RandomTensor({2, 2, 3, 3}, -2, 3, 45), 3, 45)
      .Attr("data_layout", std::string("NHWC"));
  EXPECT_THAT(t.CheckGrad({"X", "Scale", "Bias"}, {"Y"}), IsEmpty());
}

TEST(BatchNormKernelTest, GradientWithGlobalStats) {
  OpTester t("batch_norm");
  BatchNorm(t, RandomTensor({2, 2, 2, 2}, -2, 3, 50), 2, 50)
      .Attr("use_global_stats", true);
  EXPECT_THAT(t.CheckGrad({"X", "Scale", "Bias"}, {"Y"}), IsEmpty());
}

TEST(BatchNormKernelTest, ScaleOfWrongSizeIsAnError) {
  OpTester t("batch_norm");
  t.Input("X", RandomTensor({2, 3, 2, 2}, -1, 1, 1))
      .Input("Scale", RandomTensor({2}, 0.5, 1.5, 2))
      .Input("Bias", RandomTensor({3}, -1, 1, 3))
      .Input("Mean", RandomTensor({3}, -1, 1, 4))
      .Input("Variance", RandomTensor({3}, 0.5, 2, 5))
      .Output("Y")
      .Output("MeanOut")
      .Output("VarianceOut")
      .Output("SavedMean")
      .Output("SavedVariance");
  Status s = t.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("'batch_norm'"));
  EXPECT_THAT(s.message(), HasSubstr("Scale"));
}

TEST(BatchNormKernelTest, RankOneInputIsAnError) {
  OpTester t("batch_norm");
  BatchNorm(t, RandomTensor({3}, -1, 1, 1), 3, 1);
  Status s = t.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("rank 2 to 5"));
}

TEST(BatchNormSchemaTest, UnknownBatchAtCompileTime) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 32, 112, 112});
  block.Var("x")->SetDType(DType::kFP32);
  for (const char* name : {"scale", "bias", "mean", "variance"}) {
    block.Var(name)->SetDims({32});
    block.Var(name)->SetDType(DType::kFP32);
  }
  for (const char* name : {"y", "saved_mean", "saved_variance"})
    block.Var(name);
  OpDesc* op = block.AppendOp("batch_norm");
  op->SetInput("X", {"x"});
  op->SetInput("Scale", {"scale"});
  op->SetInput("Bias", {"bias"});
  op->SetInput("Mean", {"mean"});
  op->SetInput("Variance", {"variance"});
  op->SetOutput("Y", {"y"});
  op->SetOutput("MeanOut", {"mean"});
  op->SetOutput("VarianceOut", {"variance"});
  op->SetOutput("SavedMean", {"saved_mean"});
  op->SetOutput("SavedVariance", {"saved_variance"});
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("y")->dims(), (Dims{-1, 32, 112, 112}));
  EXPECT_EQ(block.FindVar("saved_mean")->dims(), (Dims{32}));
}

}  // namespace
}  // namespace parex::testing
