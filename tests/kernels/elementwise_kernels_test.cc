// Tests of kernels/cpu/elementwise_kernels.cc and
// graph/ir/ops/elementwise_ops.cc: forward values against a naive multi-index
// loop, gradients against finite differences, Fluid's axis broadcasting cases,
// numpy's both-way broadcasting at axis -1 (also against PaddlePaddle 2.6.2)
// and shape errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "graph/ir/op_schema.h"
#include "kernels/device_context.h"
#include "kernels/kernel_registry.h"
#include "kernels/op_runner.h"
#include "tests/kernels/op_tester.h"
#include "tests/kernels/paddle_golden.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct BroadcastCase {
  Dims x;
  Dims y;
  int axis;
};

std::string CaseName(const BroadcastCase& c) {
  return DimsToString(c.x) + " " + DimsToString(c.y) + " axis " +
         std::to_string(c.axis);
}

const std::vector<BroadcastCase>& BroadcastCases() {
  static const std::vector<BroadcastCase> cases = {
      {{2, 3}, {2, 3}, -1},        // same shape
      {{2, 3, 4}, {3, 4}, -1},     // trailing run
      {{2, 3, 4}, {3}, 1},         // middle run
      {{2, 3, 4}, {2}, 0},         // leading run
      {{2, 3, 4}, {1}, -1},        // one value
      {{2, 3, 4}, {3, 1}, 1},      // trailing 1 of Y
      {{2, 3, 4}, {2, 1, 4}, -1},  // inner 1 of Y
      {{3, 4}, {1, 1}, -1},        // all ones, same rank
      {{2, 1, 3}, {1, 3}, 1},      // 1 in X matched by 1 in Y
      // numpy's rule at axis -1: X broadcasts too.
      {{3, 1}, {1, 4}, -1},                    // both ways
      {{4}, {2, 3, 4}, -1},                    // Y of higher rank
      {{2, 1, 4}, {3, 1}, -1},                 // both, Y of lower rank
      {{1}, {2, 3}, -1},                       // X one value
      {{2, 3, 1}, {2, 1, 5}, -1},              // same rank, both
      {{3, 1, 2, 1}, {1, 4, 1, 2}, -1},        // alternating dims
      {{5, 1, 3, 1, 2}, {1, 4, 1, 6, 1}, -1},  // as the CUDA cases
  };
  return cases;
}

struct OpCase {
  const char* type;
  std::function<double(double, double)> f;
  double y_lo;  // Y's range (away from 0 for div)
  double y_hi;
};

const std::vector<OpCase>& OpCases() {
  static const std::vector<OpCase> ops = {
      {"elementwise_add", [](double a, double b) { return a + b; }, -1, 1},
      {"elementwise_sub", [](double a, double b) { return a - b; }, -1, 1},
      {"elementwise_mul", [](double a, double b) { return a * b; }, -1, 1},
      {"elementwise_div", [](double a, double b) { return a / b; }, 0.5, 2},
  };
  return ops;
}

TEST(ElementwiseKernelsTest, AddHandComputedFloat) {
  OpTester t("elementwise_add");
  t.Input("X", MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6}))
      .Input("Y", MakeTensor<float>({3}, {10, 20, 30}))
      .Output("Out");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<float>(t.Out("Out")),
            (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST(ElementwiseKernelsTest, MulAxisZeroHandComputedFloat) {
  OpTester t("elementwise_mul");
  t.Input("X", MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6}))
      .Input("Y", MakeTensor<float>({2}, {2, -1}))
      .Output("Out")
      .Attr("axis", 0);
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<float>(t.Out("Out")),
            (std::vector<float>{2, 4, 6, -4, -5, -6}));
}

TEST(ElementwiseKernelsTest, ForwardMatchesNaiveLoopOnEveryBroadcastCase) {
  uint32_t seed = 1;
  for (const OpCase& op : OpCases()) {
    for (const BroadcastCase& c : BroadcastCases()) {
      SCOPED_TRACE(std::string(op.type) + " " + CaseName(c));
      Tensor x = RandomTensor(c.x, -2, 2, seed++);
      Tensor y = RandomTensor(c.y, op.y_lo, op.y_hi, seed++);
      OpTester t(op.type);
      t.Input("X", x).Input("Y", y).Output("Out").Attr("axis", c.axis);
      ASSERT_TRUE(t.Run().ok());
      EXPECT_EQ(
          CompareTensors(t.Out("Out"), NaiveElementwise(x, y, c.axis, op.f),
                         1e-12, 1e-12),
          "");
    }
  }
}

TEST(ElementwiseKernelsTest, GradMatchesFiniteDifferencesOnEveryBroadcastCase) {
  uint32_t seed = 100;
  for (const OpCase& op : OpCases()) {
    for (const BroadcastCase& c : BroadcastCases()) {
      SCOPED_TRACE(std::string(op.type) + " " + CaseName(c));
      Tensor x = RandomTensor(c.x, -2, 2, seed++);
      Tensor y = RandomTensor(c.y, op.y_lo, op.y_hi, seed++);
      OpTester t(op.type);
      t.Input("X", x).Input("Y", y).Output("Out").Attr("axis", c.axis);
      EXPECT_THAT(t.CheckGrad({"X", "Y"}, {"Out"}), IsEmpty());
    }
  }
}

TEST(ElementwiseKernelsTest, IntegerKernels) {
  OpTester add("elementwise_add");
  add.Input("X", MakeTensor<int32_t>({2, 2}, {1, 2, 3, 4}))
      .Input("Y", MakeTensor<int32_t>({2}, {10, 20}))
      .Output("Out");
  ASSERT_TRUE(add.Run().ok());
  EXPECT_EQ(ToVector<int32_t>(add.Out("Out")),
            (std::vector<int32_t>{11, 22, 13, 24}));

  OpTester div("elementwise_div");
  div.Input("X", MakeTensor<int64_t>({3}, {7, -7, 9}))
      .Input("Y", MakeTensor<int64_t>({3}, {2, 2, 3}))
      .Output("Out");
  ASSERT_TRUE(div.Run().ok());
  EXPECT_EQ(ToVector<int64_t>(div.Out("Out")),
            (std::vector<int64_t>{3, -3, 3}));
}

TEST(ElementwiseKernelsTest, IntegerDivisionByZeroIsAnError) {
  OpTester t("elementwise_div");
  t.Input("X", MakeTensor<int64_t>({2}, {1, 2}))
      .Input("Y", MakeTensor<int64_t>({2}, {1, 0}))
      .Output("Out");
  Status s = t.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("division by zero"));
}

TEST(ElementwiseKernelsTest, InPlaceOutputIsX) {
  OpTester t("elementwise_sub");
  t.Input("X", MakeTensor<double>({2, 2}, {5, 6, 7, 8}))
      .Input("Y", MakeTensor<double>({2}, {1, 2}))
      .Output("Out");
  ASSERT_TRUE(t.Run().ok());
  // Rebind Out to X's variable and run again: X - Y - Y.
  OpDesc& op = t.program().global_block().op(0);
  op.SetOutput("Out", {"X_0"});
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<double>(*t.scope().FindVar("X_0")->GetTensor()),
            (std::vector<double>{4, 4, 6, 6}));
}

TEST(ElementwiseKernelsTest, GradWithOnlyYGradOrOnlyXGrad) {
  // Y@GRAD alone (X@GRAD not bound) and X@GRAD alone both work.
  for (const char* missing : {"X@GRAD", "Y@GRAD"}) {
    SCOPED_TRACE(missing);
    OpTester t("elementwise_mul");
    t.Input("X", MakeTensor<double>({2, 2}, {1, 2, 3, 4}))
        .Input("Y", MakeTensor<double>({2}, {10, 20}))
        .Output("Out");
    ASSERT_TRUE(t.Run().ok());
    Block& block = t.program().global_block();
    OpDesc* grad = block.AppendOp("elementwise_mul_grad");
    grad->SetInput("X", {"X_0"});
    grad->SetInput("Y", {"Y_0"});
    grad->SetInput("Out@GRAD", {"Out_0"});  // dOut = Out for the check
    grad->SetOutput("X@GRAD", {"dx"});
    grad->SetOutput("Y@GRAD", {"dy"});
    grad->SetOutput(missing, {});
    block.Var("dx");
    block.Var("dy");
    ASSERT_TRUE(InferShapeAtCompileTime(*grad, block, true).ok());
    CpuDeviceContext device;
    ASSERT_TRUE(RunOp(*grad, &t.scope(), &device).ok());
    // Out = [10, 40, 30, 80].
    if (std::string(missing) == "X@GRAD") {
      EXPECT_EQ(ToVector<double>(*t.scope().FindVar("dy")->GetTensor()),
                (std::vector<double>{10 * 1 + 30 * 3, 40 * 2 + 80 * 4}));
    } else {
      EXPECT_EQ(ToVector<double>(*t.scope().FindVar("dx")->GetTensor()),
                (std::vector<double>{100, 800, 300, 1600}));
    }
  }
}

TEST(ElementwiseKernelsTest, NonBroadcastableShapesAreAnErrorNamingTheOp) {
  struct Bad {
    Dims x;
    Dims y;
    int axis;
  };
  for (const Bad& b : std::vector<Bad>{{{2, 3}, {4}, -1},
                                       {{2, 3}, {2}, 1},
                                       {{2, 3}, {3, 2}, -1},
                                       {{2, 3, 4}, {2, 3}, -1},
                                       {{3}, {2, 3}, 0},
                                       {{3, 1}, {1, 4}, 0},
                                       {{2, 3}, {3}, 2}}) {
    SCOPED_TRACE(DimsToString(b.x) + " " + DimsToString(b.y));
    OpTester t("elementwise_add");
    t.Input("X", RandomTensor(b.x, -1, 1, 1))
        .Input("Y", RandomTensor(b.y, -1, 1, 2))
        .Output("Out")
        .Attr("axis", b.axis);
    Status s = t.Run();
    EXPECT_FALSE(s.ok());
    EXPECT_THAT(s.message(), HasSubstr("elementwise_add"));
    EXPECT_THAT(s.message(), HasSubstr("cannot be broadcast"));
    EXPECT_THAT(s.message(), HasSubstr(DimsToString(b.x)));
    EXPECT_THAT(s.message(), HasSubstr(DimsToString(b.y)));
  }
}

TEST(ElementwiseKernelsTest, MismatchedDTypesAreAnError) {
  OpTester t("elementwise_mul");
  t.Input("X", MakeTensor<float>({2}, {1, 2}))
      .Input("Y", MakeTensor<double>({2}, {1, 2}))
      .Output("Out");
  Status s = t.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("elementwise_mul"));
}

TEST(ElementwiseKernelsTest, CompileTimeShapesAcceptUnknownBatch) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 3, 4});
  block.Var("x")->SetDType(DType::kFP32);
  block.Var("y")->SetDims({3, 1});
  block.Var("y")->SetDType(DType::kFP32);
  block.Var("bad")->SetDims({5});
  block.Var("bad")->SetDType(DType::kFP32);
  block.Var("out");
  OpDesc* op = block.AppendOp("elementwise_add");
  op->SetInput("X", {"x"});
  op->SetInput("Y", {"y"});
  op->SetOutput("Out", {"out"});
  op->SetAttr("axis", 1);
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("out")->dims(), (Dims{-1, 3, 4}));
  EXPECT_EQ(block.FindVar("out")->dtype(), DType::kFP32);

  op->SetInput("Y", {"bad"});
  Status s = InferShapeAtCompileTime(*op, block, false);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("elementwise_add"));
}

// ---- numpy's both-way broadcasting at axis -1 (Paddle 2.x)

TEST(ElementwiseKernelsTest, BothWayBroadcastHandComputed) {
  OpTester add("elementwise_add");
  add.Input("X", MakeTensor<float>({3, 1}, {1, 2, 3}))
      .Input("Y", MakeTensor<float>({1, 4}, {10, 20, 30, 40}))
      .Output("Out");
  ASSERT_TRUE(add.Run().ok());
  EXPECT_EQ(add.Out("Out").dims(), (Dims{3, 4}));
  EXPECT_EQ(
      ToVector<float>(add.Out("Out")),
      (std::vector<float>{11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43}));

  OpTester mul("elementwise_mul");  // X of lower rank than Y
  mul.Input("X", MakeTensor<int64_t>({2}, {2, -1}))
      .Input("Y", MakeTensor<int64_t>({2, 2}, {1, 2, 3, 4}))
      .Output("Out");
  ASSERT_TRUE(mul.Run().ok());
  EXPECT_EQ(mul.Out("Out").dims(), (Dims{2, 2}));
  EXPECT_EQ(ToVector<int64_t>(mul.Out("Out")),
            (std::vector<int64_t>{2, -2, 6, -4}));
}

// dX and dY are Out@GRAD summed over the dims along which each repeats:
// X [2,1], Y [1,3], Out = X + Y [2,3], Out@GRAD = Out.
TEST(ElementwiseKernelsTest, BothWayGradSumsOverRepeatedDims) {
  OpTester t("elementwise_add");
  t.Input("X", MakeTensor<double>({2, 1}, {1, 2}))
      .Input("Y", MakeTensor<double>({1, 3}, {10, 20, 30}))
      .Output("Out");
  ASSERT_TRUE(t.Run().ok());  // Out = [[11,21,31],[12,22,32]]
  Block& block = t.program().global_block();
  OpDesc* grad = block.AppendOp("elementwise_add_grad");
  grad->SetInput("X", {"X_0"});
  grad->SetInput("Y", {"Y_0"});
  grad->SetInput("Out@GRAD", {"Out_0"});
  grad->SetOutput("X@GRAD", {"dx"});
  grad->SetOutput("Y@GRAD", {"dy"});
  block.Var("dx");
  block.Var("dy");
  ASSERT_TRUE(InferShapeAtCompileTime(*grad, block, true).ok());
  EXPECT_EQ(block.FindVar("dx")->dims(), (Dims{2, 1}));
  EXPECT_EQ(block.FindVar("dy")->dims(), (Dims{1, 3}));
  CpuDeviceContext device;
  ASSERT_TRUE(RunOp(*grad, &t.scope(), &device).ok());
  EXPECT_EQ(ToVector<double>(*t.scope().FindVar("dx")->GetTensor()),
            (std::vector<double>{63, 66}));
  EXPECT_EQ(ToVector<double>(*t.scope().FindVar("dy")->GetTensor()),
            (std::vector<double>{23, 43, 63}));
}

TEST(ElementwiseKernelsTest, BothWayCompileTimeShapes) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 1, 4});
  block.Var("x")->SetDType(DType::kFP32);
  block.Var("y")->SetDims({3, 1});
  block.Var("y")->SetDType(DType::kFP32);
  block.Var("out");
  OpDesc* op = block.AppendOp("elementwise_mul");
  op->SetInput("X", {"x"});
  op->SetInput("Y", {"y"});
  op->SetOutput("Out", {"out"});
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("out")->dims(), (Dims{-1, 3, 4}));

  OpDesc* grad = block.AppendOp("elementwise_mul_grad");
  grad->SetInput("X", {"x"});
  grad->SetInput("Y", {"y"});
  grad->SetInput("Out@GRAD", {"out"});
  grad->SetOutput("X@GRAD", {"dx"});
  grad->SetOutput("Y@GRAD", {"dy"});
  block.Var("dx");
  block.Var("dy");
  ASSERT_TRUE(InferShapeAtCompileTime(*grad, block, true).ok());
  EXPECT_EQ(block.FindVar("dx")->dims(), (Dims{-1, 1, 4}));
  EXPECT_EQ(block.FindVar("dy")->dims(), (Dims{3, 1}));
}

// Out@GRAD must have the broadcast dims; without X (Fluid's older grad ops)
// X stands at Out@GRAD's dims, so a Y larger than Out@GRAD is refused.
TEST(ElementwiseKernelsTest, GradShapeMismatchesNameTheOp) {
  struct Bad {
    Dims x, y, dout;
    const char* why;
  };
  for (const Bad& b :
       std::vector<Bad>{{{3, 1}, {1, 4}, {3, 1}, "does not match Out [3,4]"},
                        {{}, {2, 3}, {3}, "does not match Out [2,3]"}}) {
    SCOPED_TRACE(b.why);
    Scope scope;
    Program program;
    Block& block = program.global_block();
    OpDesc* grad = block.AppendOp("elementwise_sub_grad");
    if (!b.x.empty()) {
      grad->SetInput("X", {"x"});
      *scope.Var("x")->GetMutableTensor() = RandomTensor(b.x, -1, 1, 1);
    }
    grad->SetInput("Y", {"y"});
    grad->SetInput("Out@GRAD", {"dout"});
    grad->SetOutput("X@GRAD", {"dx"});
    grad->SetOutput("Y@GRAD", {"dy"});
    *scope.Var("y")->GetMutableTensor() = RandomTensor(b.y, -1, 1, 2);
    *scope.Var("dout")->GetMutableTensor() = RandomTensor(b.dout, -1, 1, 3);
    scope.Var("dx");
    scope.Var("dy");
    CpuDeviceContext device;
    Status s = RunOp(*grad, &scope, &device);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("elementwise_sub_grad"));
    EXPECT_THAT(s.message(), HasSubstr(b.why));
  }
}

// Out = X in place cannot grow X: a clear error, not a write past X.
TEST(ElementwiseKernelsTest, InPlaceOutputThatWouldGrowXIsAnError) {
  OpTester t("elementwise_add");
  t.Input("X", MakeTensor<double>({3, 1}, {1, 2, 3}))
      .Input("Y", MakeTensor<double>({1, 4}, {1, 2, 3, 4}))
      .Output("Out");
  ASSERT_TRUE(t.Run().ok());
  t.program().global_block().op(0).SetOutput("Out", {"X_0"});
  Status s = t.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("elementwise_add"));
  EXPECT_THAT(s.message(), HasSubstr("in place"));
}

TEST(ElementwiseKernelsTest, LessThanBroadcastsBothWays) {
  for (const BroadcastCase& c : BroadcastCases()) {
    SCOPED_TRACE(CaseName(c));
    Tensor x = RandomTensor(c.x, -1, 1, 11);
    Tensor y = RandomTensor(c.y, -1, 1, 12);
    OpTester t("less_than");
    t.Input("X", x).Input("Y", y).Output("Out").Attr("axis", c.axis);
    ASSERT_TRUE(t.Run().ok());
    const Tensor expected = NaiveElementwise(
        x, y, c.axis, [](double a, double b) { return a < b ? 1.0 : 0.0; });
    ASSERT_EQ(t.Out("Out").dims(), expected.dims());
    for (int64_t i = 0; i < expected.numel(); ++i) {
      EXPECT_EQ(t.Out("Out").data<bool>()[i], expected.data<double>()[i] != 0)
          << i;
    }
  }
}

// PaddlePaddle 2.6.2's forward and gradient ops on both-way cases
// (tests/kernels/paddle_goldens/elementwise.json).
// Three both-way cases per op; add/sub/mul/div also Y inside X at axis 1.
TEST(ElementwiseKernelsTest, BothWayMatchesPaddle) {
  for (const char* type : {"elementwise_add", "elementwise_sub",
                           "elementwise_mul", "elementwise_div"}) {
    SCOPED_TRACE(type);
    EXPECT_EQ(CheckPaddleGoldens(type, {}, "elementwise.json"), 4);
  }
  for (const char* type :
       {"elementwise_max", "elementwise_min", "elementwise_pow"}) {
    SCOPED_TRACE(type);
    EXPECT_EQ(CheckPaddleGoldens(type, {}, "elementwise.json"), 3);
  }
}

TEST(ElementwiseKernelsTest, SchemasDeclareFluidGradSlots) {
  const OpSchemaRegistry& r = OpSchemaRegistry::Global();
  for (const char* type :
       {"elementwise_add", "elementwise_sub", "elementwise_mul"}) {
    const OpSchema* s = r.Find(type);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->grad_type(), std::string(type) + "_grad");
    EXPECT_EQ(s->grad_inputs(),
              (std::vector<std::string>{"X", "Y", "Out@GRAD"}));
    EXPECT_EQ(s->grad_outputs(),
              (std::vector<std::string>{"X@GRAD", "Y@GRAD"}));
  }
  EXPECT_EQ(r.Find("elementwise_div")->grad_inputs(),
            (std::vector<std::string>{"X", "Y", "Out", "Out@GRAD"}));
}

TEST(ElementwiseKernelsTest, RegistersCpuKernelsForItsDTypes) {
  ExpectCpuKernelTable({{"elementwise_add", kNumbers},
                        {"elementwise_sub", kNumbers},
                        {"elementwise_mul", kNumbers},
                        {"elementwise_div", kNumbers},
                        {"elementwise_add_grad", kFloats},
                        {"elementwise_sub_grad", kFloats},
                        {"elementwise_mul_grad", kFloats},
                        {"elementwise_div_grad", kFloats}});
}

}  // namespace
}  // namespace parex::testing

// ---- equal ------------------------------------------------------------------

namespace parex::testing {
namespace {

// Against PaddlePaddle 2.6.2 (tests/kernels/paddle_goldens/tensor_ops.json):
// floats within 1e-8, infinities, NaN, broadcasting either operand, Y at
// axis 0, bool and int operands.
TEST(EqualKernelTest, MatchesPaddle) {
  EXPECT_EQ(CheckPaddleGoldens("equal"), 6);
  ExpectCpuKernels("equal", {DType::kFP32, DType::kFP64, DType::kInt32,
                             DType::kInt64, DType::kBool});
}

// Y lined up with X's middle dim: out[i, j, k] = x[i, j, k] == y[j]
// (Paddle 2.6's shape inference refuses this axis, its kernel does it).
TEST(EqualKernelTest, AxisLinesYUpInsideX) {
  std::vector<int64_t> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int64_t>(i % 3);
  const std::vector<int64_t> y = {0, 1, 2};
  OpTester t("equal");
  t.Input("X", MakeTensor<int64_t>({2, 3, 4}, x))
      .Input("Y", MakeTensor<int64_t>({3}, y))
      .Output("Out")
      .Attr<int>("axis", 1);
  ASSERT_TRUE(t.Run().ok());
  ASSERT_EQ(t.Out("Out").dims(), (Dims{2, 3, 4}));
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 4; ++k) {
        const int at = (i * 3 + j) * 4 + k;
        EXPECT_EQ(t.Out("Out").data<bool>()[at], x[at] == y[j]) << at;
      }
    }
  }
}

TEST(EqualKernelTest, BadShapesAndAxisNameTheOp) {
  OpTester dims("equal");
  dims.Input("X", RandomTensor({2, 3}, 0, 1, 1))
      .Input("Y", RandomTensor({4}, 0, 1, 2))
      .Output("Out");
  Status s = dims.Run();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'equal'"));
  EXPECT_THAT(s.message(),
              HasSubstr("X [2,3] and Y [4] do not broadcast at axis -1"));
  OpTester axis("equal");
  axis.Input("X", RandomTensor({2, 3}, 0, 1, 1))
      .Input("Y", RandomTensor({3}, 0, 1, 2))
      .Output("Out")
      .Attr<int>("axis", 2);
  s = axis.Run();
  EXPECT_THAT(s.message(), HasSubstr("'equal'"));
  EXPECT_THAT(s.message(), HasSubstr("axis 2 is outside [-1, 1]"));
  OpTester dtype("equal");
  dtype.Input("X", RandomTensor({2}, 0, 1, 1))
      .Input("Y", RandomIntTensor({2}, 0, 1, 2))
      .Output("Out");
  s = dtype.Run();
  EXPECT_THAT(s.message(), HasSubstr("'equal'"));
  EXPECT_THAT(s.message(), HasSubstr("input X is fp64 but Y is int64"));
}

TEST(EqualSchemaTest, UnknownBatchAtCompileTime) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 1});
  block.Var("x")->SetDType(DType::kInt64);
  block.Var("y")->SetDims({4});
  block.Var("y")->SetDType(DType::kInt64);
  block.Var("out");
  OpDesc* op = block.AppendOp("equal");
  op->SetInput("X", {"x"});
  op->SetInput("Y", {"y"});
  op->SetOutput("Out", {"out"});
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("out")->dims(), (Dims{-1, 4}));
  EXPECT_EQ(block.FindVar("out")->dtype(), DType::kBool);
}

}  // namespace
}  // namespace parex::testing
