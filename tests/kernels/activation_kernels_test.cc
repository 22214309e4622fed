// Tests of kernels/cpu/activation_kernels.cc and
// graph/ir/ops/activation_ops.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/ir/op_schema.h"
#include "kernels/kernel_registry.h"
#include "tests/kernels/op_tester.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct Activation {
  const char* type;
  std::function<double(double)> f;
  const char* grad_source;  // the forward value the grad op reads
  std::function<void(OpTester&)> attrs = {};  // non-default attributes
  double lo = -2.1, hi = 1.9;  // inputs: kinks (0, clip bounds) kept out
};

const std::vector<Activation>& Activations() {
  static const double kPi = std::acos(-1.0);
  static const std::vector<Activation> all = {
      {"relu", [](double x) { return x > 0 ? x : 0; }, "Out"},
      {"sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, "Out"},
      {"tanh", [](double x) { return std::tanh(x); }, "Out"},
      {"square", [](double x) { return x * x; }, "X"},
      {"exp", [](double x) { return std::exp(x); }, "Out"},
      {"log", [](double x) { return std::log(x); }, "X", {}, 0.2, 3.0},
      {"abs", [](double x) { return std::abs(x); }, "X"},
      {"gelu",
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); },
       "X"},
      {"gelu",
       [](double x) {
         return 0.5 * x *
                (1 +
                 std::tanh(std::sqrt(2 / kPi) * (x + 0.044715 * x * x * x)));
       },
       "X", [](OpTester& t) { t.Attr<bool>("approximate", true); }},
      {"leaky_relu",
       [](double x) { return x > 0 ? x : static_cast<double>(0.1f) * x; }, "X",
       [](OpTester& t) { t.Attr<float>("alpha", 0.1f); }},
      {"hard_swish",
       [](double x) { return x * std::min(std::max(x + 3, 0.0), 6.0) / 6; },
       "X",
       {},
       -4.1,
       3.9},
      {"swish", [](double x) { return x / (1 + std::exp(-1.5 * x)); }, "X",
       [](OpTester& t) { t.Attr<float>("beta", 1.5f); }},
      {"clip", [](double x) { return std::min(std::max(x, -0.5), 1.25); }, "X",
       [](OpTester& t) {
         t.Attr<float>("min", -0.5f).Attr<float>("max", 1.25f);
       }},
  };
  return all;
}

TEST(ReluKernelTest, HandComputedFloat) {
  OpTester t("relu");
  t.Input("X", MakeTensor<float>({2, 2}, {-1.5f, 0.f, 2.f, -0.25f}))
      .Output("Out");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<float>(t.Out("Out")), (std::vector<float>{0, 0, 2, 0}));
}

TEST(SquareKernelTest, HandComputedFloat) {
  OpTester t("square");
  t.Input("X", MakeTensor<float>({3}, {-3, 0.5f, 2})).Output("Out");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<float>(t.Out("Out")), (std::vector<float>{9, 0.25f, 4}));
}

TEST(SigmoidKernelTest, HandComputedDouble) {
  OpTester t("sigmoid");
  t.Input("X", MakeTensor<double>({3}, {0, 1000, -1000})).Output("Out");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<double>(t.Out("Out")), (std::vector<double>{0.5, 1, 0}));
}

TEST(ActivationKernelsTest, ForwardMatchesScalarFormulaInBothFloatTypes) {
  for (const Activation& a : Activations()) {
    for (DType dtype : {DType::kFP32, DType::kFP64}) {
      SCOPED_TRACE(std::string(a.type) + " " + DTypeName(dtype));
      // Positive-only ops (log) keep their range; the others take [-3, 3].
      Tensor x = RandomTensor({3, 5}, a.lo > 0 ? a.lo : -3, a.lo > 0 ? a.hi : 3,
                              11, dtype);
      OpTester t(a.type);
      t.Input("X", x).Output("Out");
      if (a.attrs) a.attrs(t);
      ASSERT_TRUE(t.Run().ok());
      EXPECT_EQ(t.Out("Out").dtype(), dtype);
      Tensor expected(DType::kFP64, x.dims());
      for (int64_t i = 0; i < x.numel(); ++i) {
        double v =
            dtype == DType::kFP32 ? x.data<float>()[i] : x.data<double>()[i];
        expected.data<double>()[i] = a.f(v);
      }
      const double tol = dtype == DType::kFP32 ? 2e-6 : 1e-14;
      EXPECT_EQ(CompareTensors(t.Out("Out"), expected, tol, tol), "");
    }
  }
}

TEST(ActivationKernelsTest, GradMatchesFiniteDifferences) {
  uint32_t seed = 3;
  for (const Activation& a : Activations()) {
    for (const Dims& dims : {Dims{7}, Dims{3, 4}, Dims{2, 3, 5}}) {
      SCOPED_TRACE(std::string(a.type) + " " + DimsToString(dims));
      OpTester t(a.type);
      // Distinct values keep relu's kink away from every probed point (the
      // asymmetric range keeps 0 itself out).
      t.Input("X", DistinctRandomTensor(dims, a.lo, a.hi, seed++))
          .Output("Out");
      if (a.attrs) a.attrs(t);
      EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
    }
  }
}

TEST(ActivationKernelsTest, SchemasDeclareFluidGradSlots) {
  for (const Activation& a : Activations()) {
    const OpSchema* s = OpSchemaRegistry::Global().Find(a.type);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->grad_type(), std::string(a.type) + "_grad");
    if (std::string(a.type) == "clip") {
      EXPECT_EQ(s->grad_inputs(),
                (std::vector<std::string>{"X", "Min", "Max", "Out@GRAD"}));
    } else {
      EXPECT_EQ(s->grad_inputs(),
                (std::vector<std::string>{a.grad_source, "Out@GRAD"}));
    }
    EXPECT_EQ(s->grad_outputs(), (std::vector<std::string>{"X@GRAD"}));
  }
}

TEST(ReluKernelTest, GradShapeMismatchIsAnError) {
  OpTester t("relu_grad");
  t.Input("Out", MakeTensor<double>({2, 2}, {1, 2, 3, 4}))
      .Input("Out@GRAD", MakeTensor<double>({3}, {1, 2, 3}))
      .Output("X@GRAD");
  Status s = t.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("relu_grad"));
}

TEST(ActivationKernelsTest, CompileTimeShapesAcceptUnknownBatch) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 8});
  block.Var("x")->SetDType(DType::kFP32);
  block.Var("out");
  OpDesc* op = block.AppendOp("tanh");
  op->SetInput("X", {"x"});
  op->SetOutput("Out", {"out"});
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("out")->dims(), (Dims{-1, 8}));
  EXPECT_EQ(block.FindVar("out")->dtype(), DType::kFP32);
}

TEST(ActivationKernelsTest, RegistersCpuKernelsForItsDTypes) {
  ExpectCpuKernelTable({{"relu", kFloats},
                        {"sigmoid", kFloats},
                        {"tanh", kFloats},
                        {"square", kFloats},
                        {"relu_grad", kFloats},
                        {"sigmoid_grad", kFloats},
                        {"tanh_grad", kFloats},
                        {"square_grad", kFloats}});
}

}  // namespace
}  // namespace parex::testing

namespace parex::testing {
namespace {

// PaddlePaddle 2.6.2's own outputs and gradients (fp64), saved by
// tests/kernels/paddle_goldens/make_goldens.py: parex's kernels agree
// with Paddle's functors, attributes included.
TEST(ActivationKernelsTest, MatchPaddleGoldens) {
  std::ifstream file(std::string(PAREX_SOURCE_DIR) +
                     "/tests/kernels/paddle_goldens/activations.json");
  ASSERT_TRUE(file.good());
  const nlohmann::json doc = nlohmann::json::parse(file);
  int checked = 0;
  for (const auto& c : doc["cases"]) {
    const std::string op = c["op"];
    SCOPED_TRACE(op + " " + c["attrs"].dump());
    const std::vector<double> x = c["x"], w = c["w"], out = c["out"],
                              grad = c["x_grad"];
    const int64_t n = static_cast<int64_t>(x.size());
    auto set_attrs = [&](OpTester& t) {
      for (const auto& [name, value] : c["attrs"].items()) {
        if (value.is_boolean()) {
          t.Attr<bool>(name, value.get<bool>());
        } else {
          t.Attr<float>(name, value.get<float>());
        }
      }
    };
    OpTester fwd(op);
    fwd.Input("X", MakeTensor<double>({n}, x)).Output("Out");
    set_attrs(fwd);
    ASSERT_TRUE(fwd.Run().ok());
    EXPECT_EQ(CompareTensors(fwd.Out("Out"), MakeTensor<double>({n}, out),
                             1e-12, 1e-12),
              "");
    const OpSchema* schema = OpSchemaRegistry::Global().Find(op);
    ASSERT_NE(schema, nullptr);
    const std::string source = schema->grad_inputs()[0];
    OpTester bwd(op + "_grad");
    bwd.Input(source,
              source == "X" ? MakeTensor<double>({n}, x) : fwd.Out("Out"))
        .Input("Out@GRAD", MakeTensor<double>({n}, w))
        .Output("X@GRAD");
    set_attrs(bwd);
    ASSERT_TRUE(bwd.Run().ok());
    EXPECT_EQ(CompareTensors(bwd.Out("X@GRAD"), MakeTensor<double>({n}, grad),
                             1e-12, 1e-12),
              "");
    ++checked;
  }
  EXPECT_EQ(checked, 12);
}

}  // namespace
}  // namespace parex::testing
