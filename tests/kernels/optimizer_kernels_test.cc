// Tests of kernels/cpu/optimizer_kernels.cc and graph/ir/ops/optimizer_ops.cc:
// sgd, momentum and adam against the update formulas written out here, run
// in place (outputs bound to their inputs) for several steps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "graph/ir/op_schema.h"
#include "kernels/cpu/vector_loops.h"
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

// parex's GradAddends (Reduce mode's optimizer slices sum the places'
// gradients in the update): the same bits as Grad holding ((g0 + g1) + g2),
// over a length that is not a multiple of the kernel's blocks.
template <typename T>
void ExpectAddendsGiveTheSumsBits() {
  const int64_t n = 1500;
  const Tensor p = RandomTensor({n}, -1, 1, 40, DTypeOf<T>());
  const Tensor m1 = RandomTensor({n}, -0.1, 0.1, 41, DTypeOf<T>());
  const Tensor m2 = RandomTensor({n}, 0, 0.1, 42, DTypeOf<T>());
  std::vector<Tensor> g;
  for (int k = 0; k < 3; ++k) {
    g.push_back(RandomTensor({n}, -1, 1, 43 + k, DTypeOf<T>()));
  }
  Tensor sum = g[0].Clone();
  for (int64_t i = 0; i < n; ++i) {
    sum.data<T>()[i] =
        (g[0].data<T>()[i] + g[1].data<T>()[i]) + g[2].data<T>()[i];
  }
  auto run = [&](OpTester& t) {
    t.Input("Param", p)
        .Input("LearningRate", MakeTensor<T>({1}, {T(0.01)}))
        .Input("Moment1", m1)
        .Input("Moment2", m2)
        .Input("Beta1Pow", MakeTensor<T>({1}, {T(0.9)}))
        .Input("Beta2Pow", MakeTensor<T>({1}, {T(0.999)}))
        .Output("ParamOut")
        .Output("Moment1Out")
        .Output("Moment2Out");
    Status s = t.Run();
    ASSERT_TRUE(s.ok()) << s.ToString();
  };
  OpTester whole("adam"), added("adam");
  whole.Input("Grad", sum);
  added.Input("Grad", g[0]).Inputs("GradAddends", {g[1], g[2]});
  run(whole);
  run(added);
  for (const char* out : {"ParamOut", "Moment1Out", "Moment2Out"}) {
    EXPECT_EQ(ToVector<T>(added.Out(out)), ToVector<T>(whole.Out(out))) << out;
  }
  // Not just the gradient alone: the addends changed the update.
  OpTester alone("adam");
  alone.Input("Grad", g[0]);
  run(alone);
  EXPECT_NE(ToVector<T>(alone.Out("ParamOut")),
            ToVector<T>(whole.Out("ParamOut")));
}

TEST(AdamKernelTest, GradAddendsGiveTheBitsOfTheirSumFloat) {
  ExpectAddendsGiveTheSumsBits<float>();
}

TEST(AdamKernelTest, GradAddendsGiveTheBitsOfTheirSumDouble) {
  ExpectAddendsGiveTheSumsBits<double>();
}

TEST(AdamKernelTest, GradAddendOfAnotherShapeNamesTheOp) {
  OpTester t("adam");
  t.Input("Param", RandomTensor({2, 2}, 0, 1, 1))
      .Input("Grad", RandomTensor({2, 2}, 0, 1, 2))
      .Inputs("GradAddends", {RandomTensor({3}, 0, 1, 5)})
      .Input("LearningRate", MakeTensor<double>({1}, {0.1}))
      .Input("Moment1", RandomTensor({2, 2}, 0, 1, 3))
      .Input("Moment2", RandomTensor({2, 2}, 0, 1, 4))
      .Input("Beta1Pow", MakeTensor<double>({1}, {0.9}))
      .Input("Beta2Pow", MakeTensor<double>({1}, {0.999}))
      .Output("ParamOut")
      .Output("Moment1Out")
      .Output("Moment2Out");
  Status s = t.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("adam"));
  EXPECT_THAT(s.message(), HasSubstr("GradAddends"));
}

// The AVX2 build of the Adam loop gives the baseline build's bits (no fused
// multiply-add in either), with and without addends.
TEST(VectorLoopsTest, Avx2AdamGivesTheBaselineBits) {
  const int64_t n = 1037;
  std::vector<float> p(n), g(n), g1(n), m1(n), m2(n);
  for (int64_t i = 0; i < n; ++i) {
    p[i] = std::sin(0.1 * i);
    g[i] = std::cos(0.37 * i) * 0.01f;
    g1[i] = std::sin(0.71 * i) * 0.02f;
    m1[i] = std::sin(0.05 * i) * 0.001f;
    m2[i] = 1e-6f * (1 + std::cos(0.3 * i));
  }
  for (int addends = 0; addends <= 1; ++addends) {
    std::vector<float> out[2][3];
    const char* isas[2] = {"baseline", "avx2"};
    for (int b = 0; b < 2; ++b) {
      for (auto& v : out[b]) v.assign(n, 0);
      const float* more[1] = {g1.data()};
      cpu::AdamLoopArgs<float> a{n,
                                 p.data(),
                                 g.data(),
                                 m1.data(),
                                 m2.data(),
                                 out[b][0].data(),
                                 out[b][1].data(),
                                 out[b][2].data(),
                                 0.9f,
                                 0.999f,
                                 1e-3f,
                                 1e-8f,
                                 more,
                                 addends};
      if (!cpu::AdamLoopOn(isas[b], a)) {
        ASSERT_EQ(b, 1) << "the baseline build is always there";
        GTEST_SKIP() << "no AVX2 build or CPU: " << cpu::VectorLoopsIsa();
      }
    }
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(out[1][k], out[0][k])
          << "output " << k << ", addends " << addends;
    }
    EXPECT_NE(out[0][0], p);
  }
}

TEST(SgdKernelTest, RegistersCpuKernelsForItsDTypes) {
  ExpectCpuKernelTable(
      {{"sgd", kFloats}, {"momentum", kFloats}, {"adam", kFloats}});
}

}  // namespace
}  // namespace parex::testing
