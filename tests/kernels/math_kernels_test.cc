// Tests of kernels/cpu/math_kernels.cc and graph/ir/ops/math_ops.cc (increment,
// sqrt, floor, squared_l2_norm), and of the ops that optimizers, learning-rate
// schedules and gradient clipping added to the elementwise group
// (elementwise_max/min/pow, less_than): forward values computed here
// independently, gradients against finite differences, in-place runs and
// shape errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "graph/ir/op_schema.h"
#include "kernels/device_context.h"
#include "kernels/kernel_registry.h"
#include "kernels/op_runner.h"
#include "tests/kernels/op_tester.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

Tensor Map(const Tensor& x, const std::function<double(double)>& f) {
  Tensor out(DType::kFP64, x.dims());
  for (int64_t i = 0; i < x.numel(); ++i) {
    out.data<double>()[i] = f(x.data<double>()[i]);
  }
  return out;
}

// ---------------------------------------------------------------- increment

TEST(IncrementKernelTest, AddsStepToEveryDType) {
  OpTester f("increment");
  f.Input("X", MakeTensor<float>({1}, {1.5f})).Output("Out").Attr("step", 2.0f);
  ASSERT_TRUE(f.Run().ok());
  EXPECT_EQ(ToVector<float>(f.Out("Out")), (std::vector<float>{3.5f}));

  OpTester d("increment");
  d.Input("X", MakeTensor<double>({1}, {-1})).Output("Out").Attr("step", 0.5f);
  ASSERT_TRUE(d.Run().ok());
  EXPECT_EQ(ToVector<double>(d.Out("Out")), (std::vector<double>{-0.5}));

  OpTester i32("increment");
  i32.Input("X", MakeTensor<int32_t>({1}, {7})).Output("Out");
  ASSERT_TRUE(i32.Run().ok());
  EXPECT_EQ(ToVector<int32_t>(i32.Out("Out")), (std::vector<int32_t>{8}));
}

TEST(IncrementKernelTest, Int64CounterInPlaceCountsRuns) {
  // The step counter of learning-rate schedules: int64 [1] starting at -1,
  // incremented in place once per run.
  OpTester t("increment");
  t.Input("X", MakeTensor<int64_t>({1}, {-1})).Output("Out");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<int64_t>(t.Out("Out")), (std::vector<int64_t>{0}));
  t.program().global_block().op(0).SetOutput("Out", {"X_0"});
  for (int s = 0; s < 5; ++s) ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<int64_t>(*t.scope().FindVar("X_0")->GetTensor()),
            (std::vector<int64_t>{4}));
}

TEST(IncrementKernelTest, MoreThanOneElementIsAnErrorNamingTheOp) {
  OpTester t("increment");
  t.Input("X", MakeTensor<int64_t>({2}, {1, 2})).Output("Out");
  Status s = t.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("increment"));
  EXPECT_THAT(s.message(), HasSubstr("one element"));
}

// --------------------------------------------------------------- sqrt, floor

TEST(SqrtKernelTest, ForwardFloatAndDouble) {
  OpTester f("sqrt");
  f.Input("X", MakeTensor<float>({4}, {0, 1, 4, 2.25f})).Output("Out");
  ASSERT_TRUE(f.Run().ok());
  EXPECT_EQ(ToVector<float>(f.Out("Out")), (std::vector<float>{0, 1, 2, 1.5f}));

  Tensor x = RandomTensor({3, 4}, 0.1, 5, 1);
  OpTester d("sqrt");
  d.Input("X", x).Output("Out");
  ASSERT_TRUE(d.Run().ok());
  EXPECT_EQ(
      CompareTensors(d.Out("Out"),
                     Map(x, [](double v) { return std::sqrt(v); }), 0, 1e-15),
      "");
}

TEST(SqrtKernelTest, GradMatchesFiniteDifferences) {
  OpTester t("sqrt");
  t.Input("X", RandomTensor({2, 5}, 0.3, 3, 2)).Output("Out");
  EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
}

TEST(FloorKernelTest, ForwardRoundsTowardMinusInfinity) {
  OpTester t("floor");
  t.Input("X", MakeTensor<double>({6}, {1.5, -1.5, 2, -0.25, 0.999, -3}))
      .Output("Out");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<double>(t.Out("Out")),
            (std::vector<double>{1, -2, 2, -1, 0, -3}));

  OpTester f("floor");
  f.Input("X", MakeTensor<float>({2}, {2.75f, -0.5f})).Output("Out");
  ASSERT_TRUE(f.Run().ok());
  EXPECT_EQ(ToVector<float>(f.Out("Out")), (std::vector<float>{2, -1}));
}

TEST(FloorKernelTest, GradIsZeroAwayFromIntegers) {
  // Values inside (k, k+1): the finite differences are exactly 0.
  Tensor x = MakeTensor<double>({2, 3}, {0.3, 1.4, -0.6, 2.2, -2.7, 5.5});
  OpTester t("floor");
  t.Input("X", x).Output("Out");
  EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
}

// ---------------------------------------------------------- squared_l2_norm

TEST(SquaredL2NormKernelTest, ForwardIsTheSumOfSquares) {
  OpTester f("squared_l2_norm");
  f.Input("X", MakeTensor<float>({2, 2}, {1, -2, 3, 0.5f})).Output("Out");
  ASSERT_TRUE(f.Run().ok());
  EXPECT_EQ(f.Out("Out").dims(), (Dims{1}));
  EXPECT_EQ(ToVector<float>(f.Out("Out")), (std::vector<float>{14.25f}));

  Tensor x = RandomTensor({3, 2, 4}, -2, 2, 3);
  double expected = 0;
  for (double v : ToVector<double>(x)) expected += v * v;
  OpTester d("squared_l2_norm");
  d.Input("X", x).Output("Out");
  ASSERT_TRUE(d.Run().ok());
  EXPECT_NEAR(ToVector<double>(d.Out("Out"))[0], expected, 1e-13);
}

TEST(SquaredL2NormKernelTest, GradMatchesFiniteDifferences) {
  OpTester t("squared_l2_norm");
  t.Input("X", RandomTensor({3, 4}, -2, 2, 4)).Output("Out");
  EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
}

TEST(MathOpsTest, SchemasDeclareFluidGradSlots) {
  const OpSchemaRegistry& r = OpSchemaRegistry::Global();
  EXPECT_FALSE(r.Find("increment")->has_grad());
  EXPECT_EQ(r.Find("sqrt")->grad_type(), "sqrt_grad");
  EXPECT_EQ(r.Find("sqrt")->grad_inputs(),
            (std::vector<std::string>{"Out", "Out@GRAD"}));
  EXPECT_EQ(r.Find("floor")->grad_inputs(),
            (std::vector<std::string>{"Out@GRAD"}));
  EXPECT_EQ(r.Find("squared_l2_norm")->grad_inputs(),
            (std::vector<std::string>{"X", "Out@GRAD"}));
  EXPECT_EQ(r.Find("squared_l2_norm")->grad_outputs(),
            (std::vector<std::string>{"X@GRAD"}));
  for (const char* type :
       {"elementwise_max", "elementwise_min", "elementwise_pow"}) {
    EXPECT_EQ(r.Find(type)->grad_type(), std::string(type) + "_grad");
    EXPECT_EQ(r.Find(type)->grad_inputs(),
              (std::vector<std::string>{"X", "Y", "Out@GRAD"}));
  }
  EXPECT_FALSE(r.Find("less_than")->has_grad());
}

TEST(MathOpsTest, CompileTimeShapes) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 3});
  block.Var("x")->SetDType(DType::kFP32);
  block.Var("y")->SetDims({3});
  block.Var("y")->SetDType(DType::kFP32);
  block.Var("counter")->SetDims({1});
  block.Var("counter")->SetDType(DType::kInt64);
  for (const char* v : {"norm", "lt", "counter_out"}) block.Var(v);

  OpDesc* norm = block.AppendOp("squared_l2_norm");
  norm->SetInput("X", {"x"});
  norm->SetOutput("Out", {"norm"});
  ASSERT_TRUE(InferShapeAtCompileTime(*norm, block, true).ok());
  EXPECT_EQ(block.FindVar("norm")->dims(), (Dims{1}));
  EXPECT_EQ(block.FindVar("norm")->dtype(), DType::kFP32);

  OpDesc* lt = block.AppendOp("less_than");
  lt->SetInput("X", {"x"});
  lt->SetInput("Y", {"y"});
  lt->SetOutput("Out", {"lt"});
  ASSERT_TRUE(InferShapeAtCompileTime(*lt, block, true).ok());
  EXPECT_EQ(block.FindVar("lt")->dims(), (Dims{-1, 3}));
  EXPECT_EQ(block.FindVar("lt")->dtype(), DType::kBool);

  OpDesc* inc = block.AppendOp("increment");
  inc->SetInput("X", {"counter"});
  inc->SetOutput("Out", {"counter_out"});
  ASSERT_TRUE(InferShapeAtCompileTime(*inc, block, true).ok());
  EXPECT_EQ(block.FindVar("counter_out")->dims(), (Dims{1}));
  EXPECT_EQ(block.FindVar("counter_out")->dtype(), DType::kInt64);

  inc->SetInput("X", {"y"});  // [3]
  Status s = InferShapeAtCompileTime(*inc, block, false);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("increment"));
}

// ---------------------------------------- elementwise_max / min / pow

struct BroadcastCase {
  Dims x;
  Dims y;
  int axis;
};

const std::vector<BroadcastCase>& BroadcastCases() {
  static const std::vector<BroadcastCase> cases = {
      {{2, 3}, {2, 3}, -1},
      {{2, 3, 4}, {3, 4}, -1},
      {{2, 3, 4}, {3}, 1},
      {{2, 3, 4}, {1}, -1},
      {{2, 3, 4}, {2, 1, 4}, -1},
      {{1}, {1}, -1},
      // numpy's rule at axis -1: X broadcasts too.
      {{3, 1}, {1, 4}, -1},
      {{4}, {2, 3, 4}, -1},
      {{2, 1, 4}, {3, 1}, -1},
  };
  return cases;
}

struct BinaryCase {
  const char* type;
  std::function<double(double, double)> f;
  double x_lo, x_hi, y_lo, y_hi;
};

const std::vector<BinaryCase>& BinaryCases() {
  static const std::vector<BinaryCase> cases = {
      {"elementwise_max", [](double a, double b) { return a > b ? a : b; }, -2,
       2, -2, 2},
      {"elementwise_min", [](double a, double b) { return a < b ? a : b; }, -2,
       2, -2, 2},
      {"elementwise_pow", [](double a, double b) { return std::pow(a, b); },
       0.5, 2, -1.5, 1.5},
  };
  return cases;
}

TEST(ElementwiseMaxMinPowTest, HandComputedFloat) {
  OpTester max("elementwise_max");
  max.Input("X", MakeTensor<float>({2, 3}, {1, 5, -3, 0, 2, 9}))
      .Input("Y", MakeTensor<float>({3}, {2, 2, 2}))
      .Output("Out");
  ASSERT_TRUE(max.Run().ok());
  EXPECT_EQ(ToVector<float>(max.Out("Out")),
            (std::vector<float>{2, 5, 2, 2, 2, 9}));

  OpTester min("elementwise_min");
  min.Input("X", MakeTensor<float>({2, 2}, {1, 5, -3, 0}))
      .Input("Y", MakeTensor<float>({2}, {2, -1}))
      .Output("Out")
      .Attr("axis", 0);
  ASSERT_TRUE(min.Run().ok());
  EXPECT_EQ(ToVector<float>(min.Out("Out")),
            (std::vector<float>{1, 2, -3, -1}));

  // decay_rate ^ (step / decay_steps), as exponential_decay builds it.
  OpTester pow("elementwise_pow");
  pow.Input("X", MakeTensor<float>({1}, {0.5f}))
      .Input("Y", MakeTensor<float>({1}, {3}))
      .Output("Out");
  ASSERT_TRUE(pow.Run().ok());
  EXPECT_EQ(ToVector<float>(pow.Out("Out")), (std::vector<float>{0.125f}));
}

TEST(ElementwiseMaxMinPowTest, IntegerKernels) {
  OpTester max("elementwise_max");
  max.Input("X", MakeTensor<int64_t>({3}, {1, 7, -2}))
      .Input("Y", MakeTensor<int64_t>({1}, {3}))
      .Output("Out");
  ASSERT_TRUE(max.Run().ok());
  EXPECT_EQ(ToVector<int64_t>(max.Out("Out")), (std::vector<int64_t>{3, 7, 3}));

  OpTester pow("elementwise_pow");
  pow.Input("X", MakeTensor<int32_t>({4}, {2, 3, -2, 5}))
      .Input("Y", MakeTensor<int32_t>({4}, {3, 2, 3, 0}))
      .Output("Out");
  ASSERT_TRUE(pow.Run().ok());
  EXPECT_EQ(ToVector<int32_t>(pow.Out("Out")),
            (std::vector<int32_t>{8, 9, -8, 1}));
}

TEST(ElementwiseMaxMinPowTest, ForwardMatchesNaiveLoopOnBroadcastCases) {
  uint32_t seed = 1;
  for (const BinaryCase& op : BinaryCases()) {
    for (const BroadcastCase& c : BroadcastCases()) {
      SCOPED_TRACE(std::string(op.type) + " " + DimsToString(c.x) + " " +
                   DimsToString(c.y));
      Tensor x = RandomTensor(c.x, op.x_lo, op.x_hi, seed++);
      Tensor y = RandomTensor(c.y, op.y_lo, op.y_hi, seed++);
      OpTester t(op.type);
      t.Input("X", x).Input("Y", y).Output("Out").Attr("axis", c.axis);
      ASSERT_TRUE(t.Run().ok());
      EXPECT_EQ(
          CompareTensors(t.Out("Out"), NaiveElementwise(x, y, c.axis, op.f),
                         1e-14, 1e-14),
          "");
    }
  }
}

TEST(ElementwiseMaxMinPowTest, GradMatchesFiniteDifferencesOnBroadcastCases) {
  uint32_t seed = 50;
  for (const BinaryCase& op : BinaryCases()) {
    for (const BroadcastCase& c : BroadcastCases()) {
      SCOPED_TRACE(std::string(op.type) + " " + DimsToString(c.x) + " " +
                   DimsToString(c.y));
      // Distinct X values keep max/min away from their kinks.
      Tensor x = DistinctRandomTensor(c.x, op.x_lo, op.x_hi, seed++);
      Tensor y = RandomTensor(c.y, op.y_lo, op.y_hi, seed++);
      OpTester t(op.type);
      t.Input("X", x).Input("Y", y).Output("Out").Attr("axis", c.axis);
      EXPECT_THAT(t.CheckGrad({"X", "Y"}, {"Out"}), IsEmpty());
    }
  }
}

TEST(ElementwiseMaxMinPowTest, TiesSendTheGradientToY) {
  // Fluid: max's dX is dOut * (x > y) and dY dOut * (x <= y); min's dX is
  // dOut * (x < y) and dY dOut * (x >= y).
  for (const char* type : {"elementwise_max", "elementwise_min"}) {
    SCOPED_TRACE(type);
    OpTester t(type);
    t.Input("X", MakeTensor<double>({3}, {1, 2, 3}))
        .Input("Y", MakeTensor<double>({3}, {2, 2, 2}))
        .Output("Out");
    ASSERT_TRUE(t.Run().ok());
    Block& block = t.program().global_block();
    OpDesc* grad = block.AppendOp(std::string(type) + "_grad");
    grad->SetInput("X", {"X_0"});
    grad->SetInput("Y", {"Y_0"});
    grad->SetInput("Out@GRAD", {"dout"});
    grad->SetOutput("X@GRAD", {"dx"});
    grad->SetOutput("Y@GRAD", {"dy"});
    block.Var("dout")->SetDType(DType::kFP64);
    block.Var("dout")->SetDims({3});
    block.Var("dx");
    block.Var("dy");
    *t.scope().Var("dout")->GetMutableTensor() =
        MakeTensor<double>({3}, {10, 20, 30});
    ASSERT_TRUE(InferShapeAtCompileTime(*grad, block, true).ok());
    CpuDeviceContext device;
    ASSERT_TRUE(RunOp(*grad, &t.scope(), &device).ok());
    const bool is_max = std::string(type) == "elementwise_max";
    EXPECT_EQ(ToVector<double>(*t.scope().FindVar("dx")->GetTensor()),
              is_max ? (std::vector<double>{0, 0, 30})
                     : (std::vector<double>{10, 0, 0}));
    EXPECT_EQ(ToVector<double>(*t.scope().FindVar("dy")->GetTensor()),
              is_max ? (std::vector<double>{10, 20, 0})
                     : (std::vector<double>{0, 20, 30}));
  }
}

TEST(ElementwiseMaxMinPowTest, GradWithoutXIsAnError) {
  OpTester t("elementwise_max");
  t.Input("X", MakeTensor<double>({2}, {1, 2}))
      .Input("Y", MakeTensor<double>({2}, {2, 1}))
      .Output("Out");
  ASSERT_TRUE(t.Run().ok());
  Block& block = t.program().global_block();
  OpDesc* grad = block.AppendOp("elementwise_max_grad");
  grad->SetInput("Y", {"Y_0"});
  grad->SetInput("Out@GRAD", {"Out_0"});
  grad->SetOutput("X@GRAD", {"dx"});
  block.Var("dx");
  ASSERT_TRUE(InferShapeAtCompileTime(*grad, block, true).ok());
  CpuDeviceContext device;
  Status s = RunOp(*grad, &t.scope(), &device);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("needs input X"));
}

// ------------------------------------------------------------------ less_than

TEST(LessThanKernelTest, BroadcastsYAndWritesBool) {
  OpTester t("less_than");
  t.Input("X", MakeTensor<float>({2, 3}, {1, 5, -3, 0, 2, 9}))
      .Input("Y", MakeTensor<float>({3}, {2, 5, 0}))
      .Output("Out");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(t.Out("Out").dtype(), DType::kBool);
  EXPECT_EQ(t.Out("Out").dims(), (Dims{2, 3}));
  EXPECT_EQ(ToVector<bool>(t.Out("Out")),
            (std::vector<bool>{true, false, true, true, true, false}));
}

TEST(LessThanKernelTest, EveryDTypeAgreesWithTheNaiveComparison) {
  uint32_t seed = 300;
  for (DType dtype : {DType::kFP32, DType::kFP64}) {
    Tensor x = RandomTensor({3, 4}, -1, 1, seed++, dtype);
    Tensor y = RandomTensor({4}, -1, 1, seed++, dtype);
    OpTester t("less_than");
    t.Input("X", x).Input("Y", y).Output("Out");
    ASSERT_TRUE(t.Run().ok());
    const std::vector<bool> got = ToVector<bool>(t.Out("Out"));
    for (int64_t i = 0; i < 12; ++i) {
      const double xv =
          dtype == DType::kFP32 ? x.data<float>()[i] : x.data<double>()[i];
      const double yv = dtype == DType::kFP32 ? y.data<float>()[i % 4]
                                              : y.data<double>()[i % 4];
      EXPECT_EQ(got[i], xv < yv) << i;
    }
  }
  OpTester ints("less_than");
  ints.Input("X", MakeTensor<int64_t>({4}, {0, 9, 10, 11}))
      .Input("Y", MakeTensor<int64_t>({1}, {10}))
      .Output("Out");
  ASSERT_TRUE(ints.Run().ok());
  EXPECT_EQ(ToVector<bool>(ints.Out("Out")),
            (std::vector<bool>{true, true, false, false}));
  OpTester i32("less_than");
  i32.Input("X", MakeTensor<int32_t>({2}, {-1, 1}))
      .Input("Y", MakeTensor<int32_t>({2}, {0, 0}))
      .Output("Out");
  ASSERT_TRUE(i32.Run().ok());
  EXPECT_EQ(ToVector<bool>(i32.Out("Out")), (std::vector<bool>{true, false}));
}

TEST(LessThanKernelTest, MismatchedShapesAndDTypesAreErrors) {
  OpTester shape("less_than");
  shape.Input("X", MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6}))
      .Input("Y", MakeTensor<float>({2}, {1, 2}))
      .Output("Out");
  Status s = shape.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("less_than"));
  EXPECT_THAT(s.message(), HasSubstr("cannot be broadcast"));

  OpTester dtype("less_than");
  dtype.Input("X", MakeTensor<float>({1}, {1}))
      .Input("Y", MakeTensor<double>({1}, {1}))
      .Output("Out");
  s = dtype.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("less_than"));
}

TEST(MathOpsTest, RegistersCpuKernelsForItsDTypes) {
  ExpectCpuKernelTable({{"increment", kNumbers},
                        {"sqrt", kFloats},
                        {"sqrt_grad", kFloats},
                        {"floor", kFloats},
                        {"floor_grad", kFloats},
                        {"squared_l2_norm", kFloats},
                        {"squared_l2_norm_grad", kFloats},
                        {"elementwise_max", kNumbers},
                        {"elementwise_min", kNumbers},
                        {"elementwise_pow", kNumbers},
                        {"elementwise_max_grad", kFloats},
                        {"elementwise_min_grad", kFloats},
                        {"elementwise_pow_grad", kFloats},
                        {"less_than", kNumbers}});
}

}  // namespace
}  // namespace parex::testing
