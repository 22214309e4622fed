// Tests of kernels/cpu/reduce_kernels.cc and graph/ir/ops/reduce_ops.cc: mean,
// reduce_sum, reduce_mean (values against a naive multi-index loop, output
// dims by Paddle 2.x rules, gradients against finite differences) and sum.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/ir/op_schema.h"
#include "kernels/kernel_registry.h"
#include "tests/kernels/op_tester.h"
#include "tests/kernels/paddle_golden.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct ReduceCase {
  std::vector<int> dim;
  bool keep_dim;
  bool reduce_all;
  Dims out;  // expected Out dims for X [2,3,4]
};

std::string CaseName(const ReduceCase& c) {
  std::string s = "dim {";
  for (int d : c.dim) s += std::to_string(d) + ",";
  return s + "} keep " + std::to_string(c.keep_dim) + " all " +
         std::to_string(c.reduce_all);
}

const std::vector<ReduceCase>& ReduceCases() {
  static const std::vector<ReduceCase> cases = {
      {{0}, false, false, {3, 4}},      {{1}, false, false, {2, 4}},
      {{-1}, false, false, {2, 3}},     {{0, 2}, false, false, {3}},
      {{1, 2}, true, false, {2, 1, 1}}, {{0, 1, 2}, false, false, {1}},
      {{0}, false, true, {1}},          {{0}, true, true, {1, 1, 1}},
      {{2, 0}, true, false, {1, 3, 1}},
  };
  return cases;
}

// Naive reduction of x (fp64) over the dims in `reduced` into Out's row-major
// layout (kept dims in order).
Tensor NaiveReduce(const Tensor& x, const std::vector<bool>& reduced,
                   const Dims& out_dims, bool mean) {
  const Dims& dims = x.dims();
  Tensor out(DType::kFP64, out_dims);
  std::vector<int64_t> counts(out.numel(), 0);
  for (int64_t j = 0; j < out.numel(); ++j) out.data<double>()[j] = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    std::vector<int64_t> index(dims.size());
    int64_t rest = i;
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      index[d] = rest % dims[d];
      rest /= dims[d];
    }
    int64_t j = 0;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (!reduced[d]) j = j * dims[d] + index[d];
    }
    out.data<double>()[j] += x.data<double>()[i];
    ++counts[j];
  }
  if (mean) {
    for (int64_t j = 0; j < out.numel(); ++j)
      out.data<double>()[j] /= counts[j];
  }
  return out;
}

std::vector<bool> Mask(const ReduceCase& c, int rank) {
  std::vector<bool> mask(rank, c.reduce_all);
  for (int d : c.dim) mask[d < 0 ? d + rank : d] = true;
  return mask;
}

TEST(MeanKernelTest, HandComputedFloat) {
  OpTester t("mean");
  t.Input("X", MakeTensor<float>({2, 2}, {1, 2, 3, 4})).Output("Out");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(t.Out("Out").dims(), (Dims{1}));
  EXPECT_EQ(ToVector<float>(t.Out("Out")), (std::vector<float>{2.5f}));
}

TEST(MeanKernelTest, GradMatchesFiniteDifferences) {
  OpTester t("mean");
  t.Input("X", RandomTensor({3, 4}, -1, 1, 2)).Output("Out");
  EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
}

TEST(ReduceSumKernelTest, HandComputedFloat) {
  const Tensor x = MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  OpTester rows("reduce_sum");
  rows.Input("X", x).Output("Out").Attr("dim", std::vector<int>{0});
  ASSERT_TRUE(rows.Run().ok());
  EXPECT_EQ(rows.Out("Out").dims(), (Dims{3}));
  EXPECT_EQ(ToVector<float>(rows.Out("Out")), (std::vector<float>{5, 7, 9}));

  OpTester cols("reduce_sum");
  cols.Input("X", x)
      .Output("Out")
      .Attr("dim", std::vector<int>{1})
      .Attr("keep_dim", true);
  ASSERT_TRUE(cols.Run().ok());
  EXPECT_EQ(cols.Out("Out").dims(), (Dims{2, 1}));
  EXPECT_EQ(ToVector<float>(cols.Out("Out")), (std::vector<float>{6, 15}));

  OpTester all("reduce_sum");
  all.Input("X", x).Output("Out").Attr("reduce_all", true);
  ASSERT_TRUE(all.Run().ok());
  EXPECT_EQ(all.Out("Out").dims(), (Dims{1}));
  EXPECT_EQ(ToVector<float>(all.Out("Out")), (std::vector<float>{21}));
}

TEST(ReduceKernelsTest, EveryDimCaseMatchesNaiveLoopAndGradChecks) {
  uint32_t seed = 10;
  const Dims dims = {2, 3, 4};
  for (const char* type : {"reduce_sum", "reduce_mean"}) {
    const bool mean = std::string(type) == "reduce_mean";
    for (const ReduceCase& c : ReduceCases()) {
      SCOPED_TRACE(std::string(type) + " " + CaseName(c));
      Tensor x = RandomTensor(dims, -2, 2, seed++);
      OpTester t(type);
      t.Input("X", x)
          .Output("Out")
          .Attr("dim", c.dim)
          .Attr("keep_dim", c.keep_dim)
          .Attr("reduce_all", c.reduce_all);
      ASSERT_TRUE(t.Run().ok());
      ASSERT_EQ(t.Out("Out").dims(), c.out);
      EXPECT_EQ(
          CompareTensors(t.Out("Out"), NaiveReduce(x, Mask(c, 3), c.out, mean),
                         1e-14, 1e-12),
          "");
      EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
    }
  }
}

TEST(ReduceSumKernelTest, IntegerInputAndOutDType) {
  OpTester t("reduce_sum");
  t.Input("X", MakeTensor<int64_t>({2, 2}, {1, 2, 3, 4}))
      .Output("Out")
      .Attr("dim", std::vector<int>{1});
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<int64_t>(t.Out("Out")), (std::vector<int64_t>{3, 7}));

  // Paddle 2.x sums int32 into int64 through out_dtype.
  OpTester widen("reduce_sum");
  widen.Input("X", MakeTensor<int32_t>({3}, {1, 2, 2000000000}))
      .Output("Out")
      .Attr("reduce_all", true)
      .Attr("out_dtype", static_cast<int>(DType::kInt64));
  ASSERT_TRUE(widen.Run().ok());
  EXPECT_EQ(widen.Out("Out").dtype(), DType::kInt64);
  EXPECT_EQ(ToVector<int64_t>(widen.Out("Out")),
            (std::vector<int64_t>{2000000003}));
}

TEST(ReduceSumKernelTest, DimOutOfRangeIsAnErrorNamingTheOp) {
  OpTester t("reduce_sum");
  t.Input("X", RandomTensor({2, 3}, 0, 1, 1))
      .Output("Out")
      .Attr("dim", std::vector<int>{2});
  Status s = t.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("reduce_sum"));
  EXPECT_THAT(s.message(), HasSubstr("out of range"));
}

TEST(ReduceKernelsTest, CompileTimeShapesAcceptUnknownBatch) {
  struct Case {
    std::vector<int> dim;
    bool keep_dim;
    Dims out;
  };
  for (const Case& c : std::vector<Case>{{{1}, false, {-1}},
                                         {{0}, true, {1, 4}},
                                         {{0, 1}, false, {1}},
                                         {{-1}, true, {-1, 1}}}) {
    Program program;
    Block& block = program.global_block();
    block.Var("x")->SetDims({-1, 4});
    block.Var("x")->SetDType(DType::kFP32);
    block.Var("out");
    OpDesc* op = block.AppendOp("reduce_mean");
    op->SetInput("X", {"x"});
    op->SetOutput("Out", {"out"});
    op->SetAttr("dim", c.dim);
    op->SetAttr("keep_dim", c.keep_dim);
    ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
    EXPECT_EQ(block.FindVar("out")->dims(), c.out);
    EXPECT_EQ(block.FindVar("out")->dtype(), DType::kFP32);
  }
}

TEST(SumKernelTest, HandComputedFloatAndInt) {
  OpTester t("sum");
  t.Inputs("X", {MakeTensor<float>({2, 2}, {1, 2, 3, 4}),
                 MakeTensor<float>({2, 2}, {10, 20, 30, 40}),
                 MakeTensor<float>({2, 2}, {100, 200, 300, 400})})
      .Output("Out");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<float>(t.Out("Out")),
            (std::vector<float>{111, 222, 333, 444}));

  OpTester i("sum");
  i.Inputs("X", {MakeTensor<int32_t>({3}, {1, 2, 3}),
                 MakeTensor<int32_t>({3}, {-1, -2, -3})})
      .Output("Out");
  ASSERT_TRUE(i.Run().ok());
  EXPECT_EQ(ToVector<int32_t>(i.Out("Out")), (std::vector<int32_t>{0, 0, 0}));
}

TEST(SumKernelTest, InPlaceAccumulationIntoAnInput) {
  // Out is X[1]'s variable, as in Fluid's gradient accumulation; 300
  // elements cross the kernel's block size.
  std::vector<double> a(300), b(300), c(300);
  for (int k = 0; k < 300; ++k) {
    a[k] = k;
    b[k] = 1000 * k;
    c[k] = -1;
  }
  OpTester t("sum");
  t.Inputs("X", {MakeTensor<double>({300}, a), MakeTensor<double>({300}, b),
                 MakeTensor<double>({300}, c)})
      .Output("Out");
  ASSERT_TRUE(t.Run().ok());
  t.program().global_block().op(0).SetOutput("Out", {"X_1"});
  ASSERT_TRUE(t.Run().ok());
  const std::vector<double> got =
      ToVector<double>(*t.scope().FindVar("X_1")->GetTensor());
  for (int k = 0; k < 300; ++k) ASSERT_EQ(got[k], 1001.0 * k - 1) << k;
}

TEST(SumKernelTest, EmptyInputsAreSkipped) {
  OpTester t("sum");
  t.Inputs("X", {Tensor(DType::kFP32, {0}), MakeTensor<float>({2}, {1, 2}),
                 MakeTensor<float>({2}, {3, 4})})
      .Output("Out");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<float>(t.Out("Out")), (std::vector<float>{4, 6}));
}

TEST(SumKernelTest, MismatchedInputsAreAnErrorNamingTheOp) {
  OpTester t("sum");
  t.Inputs("X",
           {MakeTensor<float>({2}, {1, 2}), MakeTensor<float>({3}, {1, 2, 3})})
      .Output("Out");
  Status s = t.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("'sum'"));
  EXPECT_THAT(s.message(), HasSubstr("X[1]"));
}

TEST(ReduceKernelsTest, SchemasDeclareFluidGradSlots) {
  for (const char* type : {"mean", "reduce_sum", "reduce_mean"}) {
    const OpSchema* s = OpSchemaRegistry::Global().Find(type);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->grad_type(), std::string(type) + "_grad");
    EXPECT_EQ(s->grad_inputs(), (std::vector<std::string>{"X", "Out@GRAD"}));
    EXPECT_EQ(s->grad_outputs(), (std::vector<std::string>{"X@GRAD"}));
  }
  EXPECT_FALSE(OpSchemaRegistry::Global().Find("sum")->has_grad());
}

TEST(ReduceKernelsTest, RegistersCpuKernelsForItsDTypes) {
  ExpectCpuKernelTable({{"mean", kFloats},
                        {"mean_grad", kFloats},
                        {"reduce_sum", kNumbers},
                        {"reduce_mean", kFloats},
                        {"reduce_sum_grad", kFloats},
                        {"reduce_mean_grad", kFloats},
                        {"sum", kNumbers}});
}

}  // namespace
}  // namespace parex::testing

// ---- cumsum
// -------------------------------------------------------------------

namespace parex::testing {
namespace {

// Against PaddlePaddle 2.6.2 (tests/kernels/paddle_goldens/tensor_ops.json):
// exclusive, reverse, flatten; gradients through Paddle's cumsum_grad.
TEST(CumsumKernelTest, MatchesPaddle) {
  EXPECT_EQ(CheckPaddleGoldens("cumsum"), 7);
  ExpectCpuKernels("cumsum",
                   {DType::kFP32, DType::kFP64, DType::kInt32, DType::kInt64});
  ExpectCpuKernels("cumsum_grad", {DType::kFP32, DType::kFP64});
}

TEST(CumsumKernelTest, GradMatchesFiniteDifferences) {
  uint32_t seed = 80;
  for (bool flatten : {false, true}) {
    for (bool exclusive : {false, true}) {
      for (bool reverse : {false, true}) {
        for (int axis : {0, 1, -1}) {
          SCOPED_TRACE("axis " + std::to_string(axis) + " flatten " +
                       std::to_string(flatten) + " exclusive " +
                       std::to_string(exclusive) + " reverse " +
                       std::to_string(reverse));
          OpTester t("cumsum");
          t.Input("X", RandomTensor({2, 3, 4}, -1, 1, seed++))
              .Output("Out")
              .Attr<int>("axis", axis)
              .Attr<bool>("flatten", flatten)
              .Attr<bool>("exclusive", exclusive)
              .Attr<bool>("reverse", reverse);
          EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
        }
      }
    }
  }
}

TEST(CumsumKernelTest, BadAxisNamesTheOp) {
  OpTester t("cumsum");
  t.Input("X", RandomTensor({2, 3}, 0, 1, 1))
      .Output("Out")
      .Attr<int>("axis", 2);
  Status s = t.Run();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'cumsum'"));
  EXPECT_THAT(s.message(), HasSubstr("axis 2 is out of range for X [2,3]"));
  // With flatten the axis is not read (Paddle's rule).
  OpTester flat("cumsum");
  flat.Input("X", MakeTensor<double>({2, 2}, {1, 2, 3, 4}))
      .Output("Out")
      .Attr<int>("axis", 7)
      .Attr<bool>("flatten", true);
  ASSERT_TRUE(flat.Run().ok());
  EXPECT_EQ(flat.Out("Out").dims(), (Dims{4}));
  EXPECT_EQ(ToVector<double>(flat.Out("Out")),
            (std::vector<double>{1, 3, 6, 10}));
}

TEST(CumsumSchemaTest, UnknownBatchAtCompileTime) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 4});
  block.Var("x")->SetDType(DType::kFP32);
  block.Var("out");
  OpDesc* op = block.AppendOp("cumsum");
  op->SetInput("X", {"x"});
  op->SetOutput("Out", {"out"});
  op->SetAttr<bool>("flatten", true);
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("out")->dims(), (Dims{-1}));
}

// reduce_max, reduce_min and reduce_prod against PaddlePaddle 2.6.2
// (tests/kernels/paddle_goldens/reduce.json: outputs, the gradient op's
// slots and its values), and their gradients against finite differences
// on distinct values (max and min have no ties there; prod none near 0).
TEST(ReduceExtremeKernelsTest, MatchPaddleAndFiniteDifferences) {
  uint32_t seed = 70;
  for (const char* type : {"reduce_max", "reduce_min", "reduce_prod"}) {
    SCOPED_TRACE(type);
    EXPECT_EQ(CheckPaddleGoldens(type, {}, "reduce.json"), 3);
    for (const ReduceCase& c : ReduceCases()) {
      SCOPED_TRACE(CaseName(c));
      OpTester t(type);
      t.Input("X", DistinctRandomTensor({2, 3, 4}, 0.5, 1.5, seed++))
          .Output("Out")
          .Attr("dim", c.dim)
          .Attr("keep_dim", c.keep_dim)
          .Attr("reduce_all", c.reduce_all);
      ASSERT_TRUE(t.Run().ok());
      ASSERT_EQ(t.Out("Out").dims(), c.out);
      EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
    }
  }
}

// Ties: every element equal to the maximum gets the whole gradient, as in
// Paddle; integers reduce in their own dtype.
TEST(ReduceExtremeKernelsTest, TiesAndIntegers) {
  OpTester t("reduce_max_grad");
  t.Input("X", MakeTensor<double>({4}, {1, 3, 3, 2}))
      .Input("Out", MakeTensor<double>({1}, {3}))
      .Input("Out@GRAD", MakeTensor<double>({1}, {0.5}))
      .Output("X@GRAD")
      .Attr("dim", std::vector<int>{0})
      .Attr("reduce_all", true);
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(CompareTensors(t.Out("X@GRAD"),
                           MakeTensor<double>({4}, {0, 0.5, 0.5, 0}), 0, 0),
            "");
  OpTester m("reduce_min");
  m.Input("X", MakeTensor<int64_t>({2, 2}, {4, -7, 9, 2}))
      .Output("Out")
      .Attr("dim", std::vector<int>{1});
  ASSERT_TRUE(m.Run().ok());
  EXPECT_EQ(
      CompareTensors(m.Out("Out"), MakeTensor<int64_t>({2}, {-7, 2}), 0, 0),
      "");
}

}  // namespace
}  // namespace parex::testing
