// Tests of kernels/cpu/metric_kernels.cc and graph/ir/ops/metric_ops.cc: top_k
// and top_k_v2 (values, index order on ties, gradient; top_k_v2 against
// PaddlePaddle 2.6.2) and accuracy.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "graph/ir/op_schema.h"
#include "graph/ir/validate.h"
#include "kernels/kernel_registry.h"
#include "tests/kernels/op_tester.h"
#include "tests/kernels/paddle_golden.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(TopKKernelTest, HandComputedWithTies) {
  OpTester t("top_k");
  t.Input("X", MakeTensor<float>({2, 4}, {1, 3, 3, 2, 5, 4, 6, 0}))
      .Output("Out")
      .Output("Indices")
      .Attr("k", 2);
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(t.Out("Out").dims(), (Dims{2, 2}));
  EXPECT_EQ(ToVector<float>(t.Out("Out")), (std::vector<float>{3, 3, 6, 5}));
  EXPECT_EQ(t.Out("Indices").dtype(), DType::kInt64);
  EXPECT_EQ(ToVector<int64_t>(t.Out("Indices")),
            (std::vector<int64_t>{1, 2, 2, 0}));
}

TEST(TopKKernelTest, EveryKMatchesStableSort) {
  // Small integers as doubles give many ties.
  const Dims dims = {2, 3, 6};
  Tensor ints = RandomIntTensor(dims, 0, 3, 9);
  Tensor x(DType::kFP64, dims);
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.data<double>()[i] = static_cast<double>(ints.data<int64_t>()[i]);
  }
  const int64_t n = 6;
  const int64_t rows = x.numel() / n;
  for (int k = 1; k <= n; ++k) {
    SCOPED_TRACE("k " + std::to_string(k));
    OpTester t("top_k");
    t.Input("X", x).Output("Out").Output("Indices").Attr("k", k);
    ASSERT_TRUE(t.Run().ok());
    ASSERT_EQ(t.Out("Out").dims(), (Dims{2, 3, k}));
    const std::vector<double> out = ToVector<double>(t.Out("Out"));
    const std::vector<int64_t> idx = ToVector<int64_t>(t.Out("Indices"));
    for (int64_t r = 0; r < rows; ++r) {
      const double* row = x.data<double>() + r * n;
      std::vector<int64_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return row[a] > row[b]; });
      for (int m = 0; m < k; ++m) {
        EXPECT_EQ(idx[r * k + m], order[m]) << "row " << r << " rank " << m;
        EXPECT_EQ(out[r * k + m], row[order[m]]);
      }
    }
  }
}

TEST(TopKKernelTest, GradMatchesFiniteDifferences) {
  for (int k : {1, 3}) {
    SCOPED_TRACE(k);
    OpTester t("top_k");
    t.Input("X", DistinctRandomTensor({3, 5}, -1, 1, 4 + k))
        .Output("Out")
        .Output("Indices")
        .Attr("k", k);
    EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
  }
}

TEST(TopKKernelTest, BadKIsAnErrorNamingTheOp) {
  for (int k : {0, 5}) {
    OpTester t("top_k");
    t.Input("X", RandomTensor({2, 4}, 0, 1, 1))
        .Output("Out")
        .Output("Indices")
        .Attr("k", k);
    Status s = t.Run();
    EXPECT_FALSE(s.ok()) << k;
    EXPECT_THAT(s.message(), HasSubstr("top_k"));
  }
}

TEST(TopKKernelTest, CompileTimeShapesAcceptUnknownBatch) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 10});
  block.Var("x")->SetDType(DType::kFP32);
  block.Var("out");
  block.Var("indices");
  OpDesc* op = block.AppendOp("top_k");
  op->SetInput("X", {"x"});
  op->SetOutput("Out", {"out"});
  op->SetOutput("Indices", {"indices"});
  op->SetAttr("k", 3);
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("out")->dims(), (Dims{-1, 3}));
  EXPECT_EQ(block.FindVar("indices")->dims(), (Dims{-1, 3}));
  EXPECT_EQ(block.FindVar("indices")->dtype(), DType::kInt64);
}

TEST(AccuracyKernelTest, HandComputed) {
  OpTester t("accuracy");
  t.Input("Out",
          MakeTensor<float>({3, 2}, {0.9f, 0.1f, 0.8f, 0.2f, 0.6f, 0.4f}))
      .Input("Indices", MakeTensor<int64_t>({3, 2}, {0, 1, 2, 3, 1, 0}))
      .Input("Label", MakeTensor<int64_t>({3, 1}, {1, 0, 3}))
      .Output("Accuracy")
      .Output("Correct")
      .Output("Total");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(t.Out("Accuracy").dtype(), DType::kFP32);
  EXPECT_FLOAT_EQ(ToVector<float>(t.Out("Accuracy"))[0], 1.f / 3);
  EXPECT_EQ(ToVector<int32_t>(t.Out("Correct")), (std::vector<int32_t>{1}));
  EXPECT_EQ(ToVector<int32_t>(t.Out("Total")), (std::vector<int32_t>{3}));
}

TEST(AccuracyKernelTest, DoubleTopOneAllCorrect) {
  OpTester t("accuracy");
  t.Input("Out", MakeTensor<double>({2, 1}, {0.7, 0.9}))
      .Input("Indices", MakeTensor<int64_t>({2, 1}, {4, 2}))
      .Input("Label", MakeTensor<int64_t>({2, 1}, {4, 2}))
      .Output("Accuracy")
      .Output("Correct")
      .Output("Total");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<float>(t.Out("Accuracy")), (std::vector<float>{1.f}));
}

TEST(AccuracyKernelTest, BadLabelIsAnErrorNamingTheOp) {
  OpTester t("accuracy");
  t.Input("Out", MakeTensor<float>({2, 1}, {0.7f, 0.9f}))
      .Input("Indices", MakeTensor<int64_t>({2, 1}, {4, 2}))
      .Input("Label", MakeTensor<int64_t>({2}, {4, 2}))
      .Output("Accuracy")
      .Output("Correct")
      .Output("Total");
  Status s = t.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("accuracy"));
  EXPECT_THAT(s.message(), HasSubstr("Label"));

  OpTester i32("accuracy");
  i32.Input("Out", MakeTensor<float>({2, 1}, {0.7f, 0.9f}))
      .Input("Indices", MakeTensor<int64_t>({2, 1}, {4, 2}))
      .Input("Label", MakeTensor<int32_t>({2, 1}, {4, 2}))
      .Output("Accuracy")
      .Output("Correct")
      .Output("Total");
  s = i32.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("int64"));
}

TEST(TopKKernelTest, SchemaDeclaresFluidGradSlots) {
  const OpSchema* s = OpSchemaRegistry::Global().Find("top_k");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->grad_type(), "top_k_grad");
  EXPECT_EQ(s->grad_inputs(),
            (std::vector<std::string>{"X", "Indices", "Out@GRAD"}));
  EXPECT_FALSE(OpSchemaRegistry::Global().Find("accuracy")->has_grad());
}

TEST(TopKKernelTest, RegistersCpuKernelsForItsDTypes) {
  ExpectCpuKernelTable(
      {{"top_k", kFloats}, {"top_k_grad", kFloats}, {"accuracy", kFloats}});
}

// top_k_v2 along any axis, largest or smallest, ties by the lower index:
// Paddle's values, indices and gradients (paddle_goldens/top_k_v2.json).
TEST(TopKV2KernelTest, MatchesPaddleGoldens) {
  std::ifstream file(std::string(PAREX_SOURCE_DIR) +
                     "/tests/kernels/paddle_goldens/top_k_v2.json");
  ASSERT_TRUE(file.good());
  const nlohmann::json doc = nlohmann::json::parse(file);
  int checked = 0;
  for (const auto& c : doc["cases"]) {
    const Dims dims = c["x_dims"].get<std::vector<int64_t>>();
    const Dims out_dims = c["out_dims"].get<std::vector<int64_t>>();
    SCOPED_TRACE(DimsToString(dims) + " axis " +
                 std::to_string(c["axis"].get<int>()));
    const Tensor x =
        MakeTensor<double>(dims, c["x"].get<std::vector<double>>());
    OpTester fwd("top_k_v2");
    fwd.Input("X", x)
        .Output("Out")
        .Output("Indices")
        .Attr<int>("k", c["k"])
        .Attr<int>("axis", c["axis"])
        .Attr<bool>("largest", c["largest"]);
    ASSERT_TRUE(fwd.Run().ok());
    EXPECT_EQ(fwd.Out("Out").dims(), out_dims);
    EXPECT_EQ(ToVector<double>(fwd.Out("Out")),
              c["out"].get<std::vector<double>>());
    EXPECT_EQ(ToVector<int64_t>(fwd.Out("Indices")),
              c["indices"].get<std::vector<int64_t>>());
    OpTester bwd("top_k_v2_grad");
    bwd.Input("X", x)
        .Input("Indices", fwd.Out("Indices"))
        .Input("Out@GRAD",
               MakeTensor<double>(out_dims, c["w"].get<std::vector<double>>()))
        .Output("X@GRAD")
        .Attr<int>("k", c["k"])
        .Attr<int>("axis", c["axis"]);
    ASSERT_TRUE(bwd.Run().ok());
    EXPECT_EQ(CompareTensors(bwd.Out("X@GRAD"),
                             MakeTensor<double>(
                                 dims, c["x_grad"].get<std::vector<double>>()),
                             0, 0),
              "");
    ++checked;
  }
  EXPECT_EQ(checked, 5);
}

TEST(TopKV2KernelTest, GradientMatchesFiniteDifferences) {
  for (int axis : {0, 1, -1}) {
    for (bool largest : {true, false}) {
      SCOPED_TRACE("axis " + std::to_string(axis) +
                   (largest ? " largest" : " smallest"));
      OpTester t("top_k_v2");
      t.Input("X", DistinctRandomTensor({3, 4, 5}, -2, 2, 11))
          .Output("Out")
          .Output("Indices")
          .Attr<int>("k", 2)
          .Attr<int>("axis", axis)
          .Attr<bool>("largest", largest);
      EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
    }
  }
}

TEST(TopKV2KernelTest, BadAttributesAreNamed) {
  struct Bad {
    int k, axis;
    std::string message;
  };
  for (const Bad& b : {Bad{2, 3, "axis 3 is outside X [2,3]"},
                       Bad{4, -1, "k = 4 exceeds dim 1 of X [2,3]"},
                       Bad{0, 0, "k = 0 must be >= 1"}}) {
    OpTester t("top_k_v2");
    t.Input("X", RandomTensor({2, 3}, -1, 1, 3))
        .Output("Out")
        .Output("Indices")
        .Attr<int>("k", b.k)
        .Attr<int>("axis", b.axis);
    const Status s = t.Run();
    EXPECT_FALSE(s.ok());
    EXPECT_THAT(s.message(), HasSubstr("top_k_v2"));
    EXPECT_THAT(s.message(), HasSubstr(b.message));
  }
}

}  // namespace
}  // namespace parex::testing

// ---- arg_max, one_hot_v2
// ------------------------------------------------------

namespace parex::testing {
namespace {

// Against PaddlePaddle 2.6.2 (tests/kernels/paddle_goldens/tensor_ops.json):
// ties to the first, keepdims, flatten (Paddle's 0-D result is [1] here),
// int32 indices; one_hot_v2 of int32 and int64 X into fp32, fp64, int64.
TEST(ArgMaxKernelTest, MatchesPaddle) {
  EXPECT_EQ(CheckPaddleGoldens("arg_max"), 7);
  ExpectCpuKernels("arg_max",
                   {DType::kFP32, DType::kFP64, DType::kInt32, DType::kInt64});
}

TEST(OneHotV2KernelTest, MatchesPaddle) {
  EXPECT_EQ(CheckPaddleGoldens("one_hot_v2"), 3);
  ExpectCpuKernels("one_hot_v2", {DType::kInt32, DType::kInt64});
}

TEST(ArgMaxKernelTest, BadAttributesNameTheOp) {
  OpTester dtype("arg_max");
  dtype.Input("X", RandomTensor({2, 3}, 0, 1, 1))
      .Output("Out")
      .Attr<int64_t>("axis", 1)
      .Attr<int>("dtype", 5);
  Status s = dtype.Run();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'arg_max'"));
  EXPECT_THAT(s.message(),
              HasSubstr("dtype 5 is neither int64 (3) nor int32 (2)"));
  OpTester axis("arg_max");
  axis.Input("X", RandomTensor({2, 3}, 0, 1, 1))
      .Output("Out")
      .Attr<int64_t>("axis", -3);
  s = axis.Run();
  EXPECT_THAT(s.message(), HasSubstr("'arg_max'"));
  EXPECT_THAT(s.message(), HasSubstr("axis -3 is out of range for X [2,3]"));
  // axis has no default in Paddle: a program must carry it.
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({2, 3});
  block.Var("x")->SetDType(DType::kFP32);
  block.Var("out");
  OpDesc* op = block.AppendOp("arg_max");
  op->SetInput("X", {"x"});
  op->SetOutput("Out", {"out"});
  s = ValidateProgram(program);
  EXPECT_THAT(s.message(), HasSubstr("'arg_max'"));
  EXPECT_THAT(s.message(), HasSubstr("required attribute 'axis'"));
}

TEST(OneHotV2KernelTest, OutOfRangeIndicesAreErrorsUnlessAllowed) {
  for (int64_t bad : {3, -1}) {
    OpTester t("one_hot_v2");
    t.Input("X", MakeTensor<int64_t>({3}, {0, bad, 2}))
        .Output("Out")
        .Attr<int>("depth", 3);
    Status s = t.Run();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("'one_hot_v2'"));
    EXPECT_THAT(s.message(), HasSubstr("X[1] = " + std::to_string(bad) +
                                       " is outside [0, depth 3)"));
  }
  OpTester allowed("one_hot_v2");
  allowed.Input("X", MakeTensor<int32_t>({3}, {0, 7, 2}))
      .Output("Out")
      .Attr<int>("depth", 3)
      .Attr<bool>("allow_out_of_range", true);
  ASSERT_TRUE(allowed.Run().ok());
  EXPECT_EQ(allowed.Out("Out").dtype(), DType::kFP32);
  EXPECT_EQ(ToVector<float>(allowed.Out("Out")),
            (std::vector<float>{1, 0, 0, 0, 0, 0, 0, 0, 1}));
}

TEST(OneHotV2KernelTest, BadAttributesNameTheOp) {
  struct Case {
    int depth, dtype;
    std::string message;
  };
  for (const Case& c :
       {Case{0, 5, "depth 0 must be >= 1"},
        Case{-1, 5, "depth -1 must be >= 1"},
        Case{3, 0,
             "dtype 0 is not fp32 (5), fp64 (6), int32 (2) or int64 (3)"}}) {
    OpTester t("one_hot_v2");
    t.Input("X", MakeTensor<int64_t>({2}, {0, 1}))
        .Output("Out")
        .Attr<int>("depth", c.depth)
        .Attr<int>("dtype", c.dtype);
    Status s = t.Run();
    EXPECT_THAT(s.message(), HasSubstr("'one_hot_v2'"));
    EXPECT_THAT(s.message(), HasSubstr(c.message));
  }
  OpTester floats("one_hot_v2");
  floats.Input("X", RandomTensor({2}, 0, 1, 1))
      .Output("Out")
      .Attr<int>("depth", 3);
  EXPECT_THAT(floats.Run().message(),
              HasSubstr("X must be int32 or int64, got fp64"));
  OpTester tensor("one_hot_v2");
  tensor.Input("X", MakeTensor<int64_t>({2}, {0, 1}))
      .Input("depth_tensor", MakeTensor<int32_t>({1}, {3}))
      .Output("Out");
  Status s = tensor.Run();
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("input 'depth_tensor'"));
}

TEST(OneHotV2SchemaTest, UnknownBatchAtCompileTime) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 1});
  block.Var("x")->SetDType(DType::kInt64);
  block.Var("out");
  OpDesc* op = block.AppendOp("one_hot_v2");
  op->SetInput("X", {"x"});
  op->SetOutput("Out", {"out"});
  op->SetAttr<int>("depth", 10);
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("out")->dims(), (Dims{-1, 1, 10}));
  EXPECT_EQ(block.FindVar("out")->dtype(), DType::kFP32);
}

}  // namespace
}  // namespace parex::testing
