// Tests of kernels/cpu/unary_math_kernels.cc and the schemas of
// graph/ir/ops/activation_ops.cc's RegisterUnaryMathOps: every op against
// PaddlePaddle 2.6.2's outputs and gradient op (slots and values,
// tests/kernels/paddle_goldens/unary_math.json), every differentiable one's
// gradient against finite differences, in float too, and bad attributes
// named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/kernel_registry.h"
#include "tests/kernels/op_tester.h"
#include "tests/kernels/paddle_golden.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// An op of the group, the range its finite differences probe (away from
// kinks and poles) and its non-default attributes.
struct UnaryCase {
  const char* type;
  double lo, hi;
  std::function<void(OpTester&)> attrs = {};
};

const std::vector<UnaryCase>& Differentiable() {
  static const std::vector<UnaryCase> all = {
      {"sqrt", 0.3, 3},
      {"rsqrt", 0.3, 3},
      {"reciprocal", 0.3, 3},
      {"sin", -3, 3},
      {"cos", -3, 3},
      {"tan", -1.2, 1.2},
      {"asin", -0.8, 0.8},
      {"acos", -0.8, 0.8},
      {"atan", -3, 3},
      {"sinh", -2, 2},
      {"cosh", -2, 2},
      {"erf", -2, 2},
      {"log2", 0.3, 3},
      {"log10", 0.3, 3},
      {"log1p", -0.5, 3},
      {"expm1", -2, 2},
      {"silu", -3, 3},
      {"softsign", -2.1, 1.9},
      {"tanh_shrink", -2, 2},
      {"logsigmoid", -5, 5},
      {"relu6", -2.1, 7.9},
      {"hard_sigmoid", -2.9, 2.8},
      {"softplus", -3, 3,
       [](OpTester& t) {
         t.Attr<float>("beta", 2.0f).Attr<float>("threshold", 4.0f);
       }},
      {"mish", -3, 3},
      {"elu", -2.1, 1.9, [](OpTester& t) { t.Attr<float>("alpha", 0.7f); }},
      {"celu", -2.1, 1.9, [](OpTester& t) { t.Attr<float>("alpha", 1.5f); }},
      {"selu", -2.1, 1.9},
      {"hard_shrink", 0.6, 2},
      {"softshrink", 0.6, 2},
      {"thresholded_relu", 1.1, 3},
      {"brelu", -0.9, 0.9,
       [](OpTester& t) {
         t.Attr<float>("t_min", -1.0f).Attr<float>("t_max", 1.0f);
       }},
  };
  return all;
}

TEST(UnaryMathKernelsTest, MatchPaddleGoldens) {
  std::vector<std::string> ops = {"floor", "ceil", "round", "sign"};
  for (const UnaryCase& c : Differentiable()) ops.push_back(c.type);
  for (const std::string& op : ops) {
    SCOPED_TRACE(op);
    EXPECT_EQ(CheckPaddleGoldens(op, {}, "unary_math.json"), 1);
  }
}

TEST(UnaryMathKernelsTest, GradMatchesFiniteDifferences) {
  uint32_t seed = 11;
  for (const UnaryCase& c : Differentiable()) {
    for (const Dims& dims : {Dims{7}, Dims{2, 3, 4}}) {
      SCOPED_TRACE(std::string(c.type) + " " + DimsToString(dims));
      OpTester t(c.type);
      t.Input("X", DistinctRandomTensor(dims, c.lo, c.hi, seed++))
          .Output("Out");
      if (c.attrs) c.attrs(t);
      EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
    }
  }
}

TEST(UnaryMathKernelsTest, FloatKernelsAgreeWithDouble) {
  uint32_t seed = 90;
  for (const UnaryCase& c : Differentiable()) {
    SCOPED_TRACE(c.type);
    const Tensor x64 = DistinctRandomTensor({9}, c.lo, c.hi, seed++);
    Tensor x32(DType::kFP32, {9});
    for (int i = 0; i < 9; ++i) {
      x32.data<float>()[i] = static_cast<float>(x64.data<double>()[i]);
    }
    OpTester d(c.type), f(c.type);
    d.Input("X", x64).Output("Out");
    f.Input("X", x32).Output("Out");
    if (c.attrs) {
      c.attrs(d);
      c.attrs(f);
    }
    ASSERT_TRUE(d.Run().ok());
    ASSERT_TRUE(f.Run().ok());
    for (int i = 0; i < 9; ++i) {
      const double want = d.Out("Out").data<double>()[i];
      EXPECT_NEAR(f.Out("Out").data<float>()[i], want,
                  1e-5 * std::max(1.0, std::abs(want)));
    }
  }
}

TEST(UnaryMathKernelsTest, BadAttributesAreNamed) {
  struct Bad {
    const char* type;
    std::function<void(OpTester&)> attrs;
    const char* needle;
  };
  const std::vector<Bad> bad = {
      {"softplus", [](OpTester& t) { t.Attr<float>("beta", 0.0f); }, "beta"},
      {"celu", [](OpTester& t) { t.Attr<float>("alpha", 0.0f); }, "alpha"},
      {"brelu",
       [](OpTester& t) {
         t.Attr<float>("t_min", 2.0f).Attr<float>("t_max", 1.0f);
       },
       "t_min"},
  };
  for (const Bad& b : bad) {
    OpTester t(b.type);
    t.Input("X", DistinctRandomTensor({4}, -1, 1, 5)).Output("Out");
    b.attrs(t);
    Status s = t.Run();
    EXPECT_FALSE(s.ok()) << b.type;
    EXPECT_THAT(s.message(), HasSubstr(b.needle));
    EXPECT_THAT(s.message(), HasSubstr(b.type));
  }
}

}  // namespace
}  // namespace parex::testing
