// Tests of kernels/cpu/activation_kernels.cc and graph/ops/activation_ops.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
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
};

const std::vector<Activation>& Activations() {
  static const std::vector<Activation> all = {
      {"relu", [](double x) { return x > 0 ? x : 0; }, "Out"},
      {"sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, "Out"},
      {"tanh", [](double x) { return std::tanh(x); }, "Out"},
      {"square", [](double x) { return x * x; }, "X"},
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
      Tensor x = RandomTensor({3, 5}, -3, 3, 11, dtype);
      OpTester t(a.type);
      t.Input("X", x).Output("Out");
      ASSERT_TRUE(t.Run().ok());
      EXPECT_EQ(t.Out("Out").dtype(), dtype);
      Tensor expected(DType::kFP64, x.dims());
      for (int64_t i = 0; i < x.numel(); ++i) {
        double v =
            dtype == DType::kFP32 ? x.data<float>()[i] : x.data<double>()[i];
        expected.data<double>()[i] = a.f(v);
      }
      const double tol = dtype == DType::kFP32 ? 1e-6 : 1e-14;
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
      t.Input("X", DistinctRandomTensor(dims, -2.1, 1.9, seed++)).Output("Out");
      EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
    }
  }
}

TEST(ActivationKernelsTest, SchemasDeclareFluidGradSlots) {
  for (const Activation& a : Activations()) {
    const OpSchema* s = OpSchemaRegistry::Global().Find(a.type);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->grad_type(), std::string(a.type) + "_grad");
    EXPECT_EQ(s->grad_inputs(),
              (std::vector<std::string>{a.grad_source, "Out@GRAD"}));
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
  struct Entry {
    const char* type;
    std::vector<DType> dtypes;
  };
  const std::vector<DType> kFloats = {DType::kFP32, DType::kFP64};
  const std::vector<DType> kNumbers = {DType::kFP32, DType::kFP64,
                                       DType::kInt32, DType::kInt64};
  for (const Entry& e : std::vector<Entry>{{"relu", kFloats},
                                           {"sigmoid", kFloats},
                                           {"tanh", kFloats},
                                           {"square", kFloats},
                                           {"relu_grad", kFloats},
                                           {"sigmoid_grad", kFloats},
                                           {"tanh_grad", kFloats},
                                           {"square_grad", kFloats}}) {
    ExpectCpuKernels(e.type, e.dtypes);
  }
}

}  // namespace
}  // namespace parex::testing
