// Tests of kernels/cpu/optimizer_kernels.cc and graph/ops/optimizer_ops.cc:
// sgd, momentum and adam against the update formulas written out here, run
// in place (outputs bound to their inputs) for several steps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "graph/ir/op_schema.h"
#include "kernels/kernel_registry.h"
#include "tests/kernels/op_tester.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;

std::vector<double> Values(const Tensor& t) { return ToVector<double>(t); }

const Tensor& Var(OpTester& t, const std::string& name) {
  return *t.scope().FindVar(name)->GetTensor();
}

// Runs the op once as built (outputs to fresh variables), then rebinds every
// output slot in `in_place` to its input's variable and runs `steps` more
// times.
void RunInPlace(OpTester& t, const std::map<std::string, std::string>& in_place,
                int steps) {
  ASSERT_TRUE(t.Run().ok());
  OpDesc& op = t.program().global_block().op(0);
  for (const auto& [out, in] : in_place) op.SetOutput(out, {in + "_0"});
  for (int s = 0; s < steps; ++s) {
    Status status = t.Run();
    ASSERT_TRUE(status.ok()) << status.ToString();
  }
}

TEST(SgdKernelTest, HandComputedFloat) {
  OpTester t("sgd");
  t.Input("Param", MakeTensor<float>({3}, {1, 2, 3}))
      .Input("Grad", MakeTensor<float>({3}, {0.5f, -1, 2}))
      .Input("LearningRate", MakeTensor<float>({1}, {0.5f}))
      .Output("ParamOut");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<float>(t.Out("ParamOut")),
            (std::vector<float>{0.75f, 2.5f, 2}));
  // Param itself is untouched when ParamOut is another variable.
  EXPECT_EQ(ToVector<float>(Var(t, "Param_0")), (std::vector<float>{1, 2, 3}));
}

TEST(SgdKernelTest, InPlaceStepsWithFloatLearningRateAndDoubleParam) {
  Tensor p = RandomTensor({2, 3}, -1, 1, 1);
  Tensor g = RandomTensor({2, 3}, -1, 1, 2);
  OpTester t("sgd");
  t.Input("Param", p.Clone())  // the op writes it in place
      .Input("Grad", g)
      .Input("LearningRate", MakeTensor<float>({1}, {0.25f}))
      .Output("ParamOut");
  RunInPlace(t, {{"ParamOut", "Param"}}, 3);
  std::vector<double> expected = Values(p);
  for (int s = 0; s < 3; ++s) {
    for (size_t i = 0; i < expected.size(); ++i) {
      expected[i] -= 0.25 * g.data<double>()[i];
    }
  }
  EXPECT_EQ(CompareTensors(Var(t, "Param_0"),
                           MakeTensor<double>({2, 3}, expected), 1e-15, 1e-14),
            "");
}

TEST(SgdKernelTest, ShapeErrorsNameTheOp) {
  OpTester grad("sgd");
  grad.Input("Param", RandomTensor({3}, 0, 1, 1))
      .Input("Grad", RandomTensor({4}, 0, 1, 2))
      .Input("LearningRate", MakeTensor<double>({1}, {0.1}))
      .Output("ParamOut");
  Status s = grad.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("sgd"));
  EXPECT_THAT(s.message(), HasSubstr("Grad"));

  OpTester lr("sgd");
  lr.Input("Param", RandomTensor({3}, 0, 1, 1))
      .Input("Grad", RandomTensor({3}, 0, 1, 2))
      .Input("LearningRate", MakeTensor<double>({2}, {0.1, 0.2}))
      .Output("ParamOut");
  s = lr.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("LearningRate"));
}

struct MomentumCase {
  bool nesterov;
  std::string method;
  float coeff;
};

TEST(MomentumKernelTest, InPlaceStepsMatchFormula) {
  const std::vector<MomentumCase> cases = {{false, "", 0},
                                           {true, "", 0},
                                           {false, "l2_decay", 0.1f},
                                           {true, "l2_decay", 0.05f}};
  uint32_t seed = 10;
  for (const MomentumCase& c : cases) {
    SCOPED_TRACE(std::to_string(c.nesterov) + " " + c.method);
    Tensor p = RandomTensor({4, 3}, -1, 1, seed++);
    Tensor g = RandomTensor({4, 3}, -1, 1, seed++);
    Tensor v = RandomTensor({4, 3}, -1, 1, seed++);
    const double lr = 0.1;
    const float mu = 0.9f;
    OpTester t("momentum");
    t.Input("Param", p.Clone())  // the op writes it in place
        .Input("Grad", g)
        .Input("Velocity", v.Clone())
        .Input("LearningRate", MakeTensor<double>({1}, {lr}))
        .Output("ParamOut")
        .Output("VelocityOut")
        .Attr("mu", mu)
        .Attr("use_nesterov", c.nesterov)
        .Attr("regularization_method", c.method)
        .Attr("regularization_coeff", c.coeff);
    RunInPlace(t, {{"ParamOut", "Param"}, {"VelocityOut", "Velocity"}}, 2);
    std::vector<double> pe = Values(p);
    std::vector<double> ve = Values(v);
    const double m = mu;
    const double coeff = c.method == "l2_decay" ? double{c.coeff} : 0.0;
    for (int s = 0; s < 2; ++s) {
      for (size_t i = 0; i < pe.size(); ++i) {
        const double gi = g.data<double>()[i] + coeff * pe[i];
        ve[i] = m * ve[i] + gi;
        pe[i] = c.nesterov ? pe[i] - (gi + m * ve[i]) * lr : pe[i] - lr * ve[i];
      }
    }
    EXPECT_EQ(CompareTensors(Var(t, "Param_0"), MakeTensor<double>({4, 3}, pe),
                             1e-14, 1e-13),
              "");
    EXPECT_EQ(CompareTensors(Var(t, "Velocity_0"),
                             MakeTensor<double>({4, 3}, ve), 1e-14, 1e-13),
              "");
  }
}

TEST(MomentumKernelTest, AttributeErrorsNameTheOp) {
  OpTester no_mu("momentum");
  no_mu.Input("Param", RandomTensor({2}, 0, 1, 1))
      .Input("Grad", RandomTensor({2}, 0, 1, 2))
      .Input("Velocity", RandomTensor({2}, 0, 1, 3))
      .Input("LearningRate", MakeTensor<double>({1}, {0.1}))
      .Output("ParamOut")
      .Output("VelocityOut");
  Status s = no_mu.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("momentum"));
  EXPECT_THAT(s.message(), HasSubstr("mu"));

  OpTester method("momentum");
  method.Input("Param", RandomTensor({2}, 0, 1, 1))
      .Input("Grad", RandomTensor({2}, 0, 1, 2))
      .Input("Velocity", RandomTensor({2}, 0, 1, 3))
      .Input("LearningRate", MakeTensor<double>({1}, {0.1}))
      .Output("ParamOut")
      .Output("VelocityOut")
      .Attr("mu", 0.9f)
      .Attr("regularization_method", std::string("l1_decay"));
  s = method.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("l1_decay"));
}

TEST(AdamKernelTest, InPlaceStepsMatchFluidFormula) {
  Tensor p = RandomTensor({3, 4}, -1, 1, 30);
  Tensor g = RandomTensor({3, 4}, -1, 1, 31);
  Tensor m1 = RandomTensor({3, 4}, -0.1, 0.1, 32);
  Tensor m2 = RandomTensor({3, 4}, 0, 0.1, 33);
  const double lr = 0.01;
  const double beta1 = 0.9f;  // the attribute is a float
  const double beta2 = 0.999f;
  const double epsilon = 1e-8f;
  OpTester t("adam");
  t.Input("Param", p.Clone())  // the op writes it in place
      .Input("Grad", g)
      .Input("LearningRate", MakeTensor<double>({1}, {lr}))
      .Input("Moment1", m1.Clone())
      .Input("Moment2", m2.Clone())
      .Input("Beta1Pow", MakeTensor<double>({1}, {beta1}))
      .Input("Beta2Pow", MakeTensor<double>({1}, {beta2}))
      .Output("ParamOut")
      .Output("Moment1Out")
      .Output("Moment2Out")
      .Output("Beta1PowOut")
      .Output("Beta2PowOut");
  RunInPlace(t,
             {{"ParamOut", "Param"},
              {"Moment1Out", "Moment1"},
              {"Moment2Out", "Moment2"},
              {"Beta1PowOut", "Beta1Pow"},
              {"Beta2PowOut", "Beta2Pow"}},
             3);
  std::vector<double> pe = Values(p), a = Values(m1), b = Values(m2);
  double b1p = beta1, b2p = beta2;
  for (int s = 0; s < 3; ++s) {
    const double lr_t = lr * std::sqrt(1 - b2p) / (1 - b1p);
    for (size_t i = 0; i < pe.size(); ++i) {
      const double gi = g.data<double>()[i];
      a[i] = beta1 * a[i] + (1 - beta1) * gi;
      b[i] = beta2 * b[i] + (1 - beta2) * gi * gi;
      pe[i] -= lr_t * a[i] / (std::sqrt(b[i]) + epsilon * std::sqrt(1 - b2p));
    }
    b1p *= beta1;
    b2p *= beta2;
  }
  EXPECT_EQ(CompareTensors(Var(t, "Param_0"), MakeTensor<double>({3, 4}, pe),
                           1e-14, 1e-12),
            "");
  EXPECT_EQ(CompareTensors(Var(t, "Moment1_0"), MakeTensor<double>({3, 4}, a),
                           1e-15, 1e-13),
            "");
  EXPECT_EQ(CompareTensors(Var(t, "Moment2_0"), MakeTensor<double>({3, 4}, b),
                           1e-15, 1e-13),
            "");
  EXPECT_NEAR(Values(Var(t, "Beta1Pow_0"))[0], b1p, 1e-15);
  EXPECT_NEAR(Values(Var(t, "Beta2Pow_0"))[0], b2p, 1e-15);
}

TEST(AdamKernelTest, FloatParamsAndOptionalPowOutputs) {
  // Without Beta*PowOut (older Fluid programs update the powers with scale
  // ops) the powers stay as they are.
  OpTester t("adam");
  t.Input("Param", MakeTensor<float>({2}, {1, -1}))
      .Input("Grad", MakeTensor<float>({2}, {0.5f, -0.5f}))
      .Input("LearningRate", MakeTensor<float>({1}, {0.1f}))
      .Input("Moment1", MakeTensor<float>({2}, {0, 0}))
      .Input("Moment2", MakeTensor<float>({2}, {0, 0}))
      .Input("Beta1Pow", MakeTensor<float>({1}, {0.9f}))
      .Input("Beta2Pow", MakeTensor<float>({1}, {0.999f}))
      .Output("ParamOut")
      .Output("Moment1Out")
      .Output("Moment2Out");
  ASSERT_TRUE(t.Run().ok());
  // First step: m1 = 0.1 g, m2 = 0.001 g^2, lr_t = 0.1 sqrt(0.001) / 0.1,
  // so the step is lr_t * 0.1|g| / (sqrt(0.001)|g| + ~0) = 0.1.
  const std::vector<float> out = ToVector<float>(t.Out("ParamOut"));
  EXPECT_NEAR(out[0], 0.9f, 1e-5);
  EXPECT_NEAR(out[1], -0.9f, 1e-5);
  EXPECT_EQ(ToVector<float>(Var(t, "Beta1Pow_0")), (std::vector<float>{0.9f}));
}

TEST(AdamKernelTest, MomentShapeErrorNamesTheOp) {
  OpTester t("adam");
  t.Input("Param", RandomTensor({2, 2}, 0, 1, 1))
      .Input("Grad", RandomTensor({2, 2}, 0, 1, 2))
      .Input("LearningRate", MakeTensor<double>({1}, {0.1}))
      .Input("Moment1", RandomTensor({4}, 0, 1, 3))
      .Input("Moment2", RandomTensor({2, 2}, 0, 1, 4))
      .Input("Beta1Pow", MakeTensor<double>({1}, {0.9}))
      .Input("Beta2Pow", MakeTensor<double>({1}, {0.999}))
      .Output("ParamOut")
      .Output("Moment1Out")
      .Output("Moment2Out");
  Status s = t.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("adam"));
  EXPECT_THAT(s.message(), HasSubstr("Moment1"));
}

TEST(SgdKernelTest, RegistersCpuKernelsForItsDTypes) {
  struct Entry {
    const char* type;
    std::vector<DType> dtypes;
  };
  const std::vector<DType> kFloats = {DType::kFP32, DType::kFP64};
  const std::vector<DType> kNumbers = {DType::kFP32, DType::kFP64,
                                       DType::kInt32, DType::kInt64};
  for (const Entry& e : std::vector<Entry>{
           {"sgd", kFloats}, {"momentum", kFloats}, {"adam", kFloats}}) {
    ExpectCpuKernels(e.type, e.dtypes);
  }
}

}  // namespace
}  // namespace parex::testing
