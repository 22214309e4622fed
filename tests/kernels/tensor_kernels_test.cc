// Tests of stack, gather, expand_v2 and where (kernels/cpu/tensor_kernels.cc,
// schemas in graph/ir/ops/tensor_ops.cc): outputs and gradients against
// PaddlePaddle 2.6.2's (tests/kernels/paddle_goldens/tensor_ops.json),
// gradients by finite differences, bad attributes and shapes named,
// compile-time shapes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/ir/op_schema.h"
#include "kernels/device_context.h"
#include "kernels/op_runner.h"
#include "tests/kernels/op_tester.h"
#include "tests/kernels/paddle_golden.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Runs t expecting an InvalidArgument error that names `op`; returns the
// message.
std::string RunError(OpTester& t, const std::string& op) {
  Status s = t.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("'" + op + "'"));
  return s.message();
}

TEST(TensorKernelsTest, MatchPaddle) {
  EXPECT_EQ(CheckPaddleGoldens("stack"), 5);
  EXPECT_EQ(CheckPaddleGoldens("gather"), 7);
  EXPECT_EQ(CheckPaddleGoldens("expand_v2"), 5);
  EXPECT_EQ(CheckPaddleGoldens("where"), 3);
}

TEST(TensorKernelsTest, KernelsForEveryDType) {
  for (const char* op : {"stack", "gather", "expand_v2", "where"}) {
    ExpectCpuKernels(
        op, {DType::kFP32, DType::kFP64, DType::kInt32, DType::kInt64});
    ExpectCpuKernels(std::string(op) + "_grad", {DType::kFP32, DType::kFP64});
  }
}

// ---- stack ------------------------------------------------------------------

TEST(StackKernelTest, GradMatchesFiniteDifferences) {
  uint32_t seed = 1;
  for (int axis : {0, 1, 2, -1, -3}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    OpTester t("stack");
    t.Inputs("X", {RandomTensor({2, 3}, -1, 1, seed),
                   RandomTensor({2, 3}, -1, 1, seed + 1),
                   RandomTensor({2, 3}, -1, 1, seed + 2)})
        .Output("Y")
        .Attr<int>("axis", axis);
    seed += 3;
    EXPECT_THAT(t.CheckGrad({"X"}, {"Y"}), IsEmpty());
  }
}

TEST(StackKernelTest, BadAxisAndDimsNameTheOp) {
  OpTester axis("stack");
  axis.Inputs("X",
              {RandomTensor({2, 3}, 0, 1, 1), RandomTensor({2, 3}, 0, 1, 2)})
      .Output("Y")
      .Attr<int>("axis", 3);
  EXPECT_THAT(RunError(axis, "stack"), HasSubstr("axis 3 is outside [-3, 2]"));
  OpTester dims("stack");
  dims.Inputs("X",
              {RandomTensor({2, 3}, 0, 1, 1), RandomTensor({3, 2}, 0, 1, 2)})
      .Output("Y");
  EXPECT_THAT(RunError(dims, "stack"),
              HasSubstr("X[1] [3,2] differs from X[0] [2,3]"));
}

// A stack_grad whose first input needs no gradient (Fluid leaves its
// X@GRAD argument empty) fills only the others.
TEST(StackKernelTest, GradSkipsUnnamedOutputs) {
  Program program;
  Block& block = program.global_block();
  Scope scope;
  for (const char* name : {"a", "b"}) {
    block.Var(name)->SetDims({2});
    block.Var(name)->SetDType(DType::kFP64);
    *scope.Var(name)->GetMutableTensor() = MakeTensor<double>({2}, {0, 0});
  }
  block.Var("dy")->SetDims({2, 2});
  block.Var("dy")->SetDType(DType::kFP64);
  *scope.Var("dy")->GetMutableTensor() =
      MakeTensor<double>({2, 2}, {1, 2, 3, 4});
  block.Var("b@GRAD");
  OpDesc* op = block.AppendOp("stack_grad");
  op->SetInput("X", {"a", "b"});
  op->SetInput("Y@GRAD", {"dy"});
  op->SetOutput("X@GRAD", {"", "b@GRAD"});
  op->SetAttr<int>("axis", 1);
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("b@GRAD")->dims(), (Dims{2}));
  CpuDeviceContext device;
  ASSERT_TRUE(RunOp(*op, &scope, &device).ok());
  EXPECT_EQ(ToVector<double>(*scope.FindVar("b@GRAD")->GetTensor()),
            (std::vector<double>{2, 4}));
}

TEST(StackSchemaTest, UnknownBatchAtCompileTime) {
  Program program;
  Block& block = program.global_block();
  for (const char* name : {"a", "b"}) {
    block.Var(name)->SetDims({-1, 4});
    block.Var(name)->SetDType(DType::kFP32);
  }
  block.Var("y");
  OpDesc* op = block.AppendOp("stack");
  op->SetInput("X", {"a", "b"});
  op->SetOutput("Y", {"y"});
  op->SetAttr<int>("axis", -1);
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("y")->dims(), (Dims{-1, 4, 2}));
  EXPECT_EQ(block.FindVar("y")->dtype(), DType::kFP32);
}

// ---- gather -----------------------------------------------------------------

TEST(GatherKernelTest, GradMatchesFiniteDifferences) {
  struct Case {
    Dims x;
    std::vector<int64_t> index;
    int axis;
  };
  uint32_t seed = 20;
  for (const Case& c :
       {Case{{5, 2}, {4, 0, 4, 1}, 0}, Case{{2, 4, 3}, {3, 3, 0}, 1},
        Case{{2, 4, 3}, {2}, -1}}) {
    SCOPED_TRACE("axis " + std::to_string(c.axis));
    OpTester t("gather");
    t.Input("X", RandomTensor(c.x, -1, 1, seed++))
        .Input("Index", MakeTensor<int64_t>(
                            {static_cast<int64_t>(c.index.size())}, c.index))
        .Output("Out")
        .Attr<int>("axis", c.axis);
    EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
  }
}

// A negative axis counts from the end (Paddle 2.6's shape inference does;
// its CPU kernel does not, so the goldens hold none).
TEST(GatherKernelTest, NegativeAxisCountsFromTheEnd) {
  std::vector<double> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i);
  OpTester t("gather");
  t.Input("X", MakeTensor<double>({2, 4, 3}, x))
      .Input("Index", MakeTensor<int32_t>({2}, {2, 0}))
      .Output("Out")
      .Attr<int>("axis", -1);
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(t.Out("Out").dims(), (Dims{2, 4, 2}));
  std::vector<double> want;
  for (int r = 0; r < 8; ++r) {
    want.push_back(3 * r + 2);
    want.push_back(3 * r);
  }
  EXPECT_EQ(ToVector<double>(t.Out("Out")), want);
}

TEST(GatherKernelTest, BadIndicesAndAttributesNameTheOp) {
  auto error = [](Tensor index, int axis) {
    OpTester t("gather");
    t.Input("X", RandomTensor({3, 2}, 0, 1, 1))
        .Input("Index", std::move(index))
        .Output("Out");
    t.Attr<int>("axis", axis);
    return RunError(t, "gather");
  };
  EXPECT_THAT(error(MakeTensor<int64_t>({2}, {0, 3}), 0),
              HasSubstr("Index[1] = 3 is outside [0, 3)"));
  EXPECT_THAT(error(MakeTensor<int32_t>({1}, {-1}), 0),
              HasSubstr("Index[0] = -1 is outside [0, 3)"));
  EXPECT_THAT(error(MakeTensor<int64_t>({1}, {0}), 2),
              HasSubstr("axis 2 is out of range for X [3,2]"));
  EXPECT_THAT(error(MakeTensor<int64_t>({1, 2}, {0, 1}), 0),
              HasSubstr("Index [1,2] must be 1-D or [N, 1]"));
  EXPECT_THAT(error(RandomTensor({2}, 0, 1, 3), 0),
              HasSubstr("Index must be int32 or int64, got fp64"));
}

TEST(GatherKernelTest, AnAxisTensorIsRefused) {
  OpTester t("gather");
  t.Input("X", RandomTensor({3, 2}, 0, 1, 1))
      .Input("Index", MakeTensor<int64_t>({1}, {0}))
      .Input("Axis", MakeTensor<int32_t>({1}, {1}))
      .Output("Out");
  Status s = t.Run();
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("'gather'"));
  EXPECT_THAT(s.message(), HasSubstr("input 'Axis'"));
}

// ---- expand_v2 --------------------------------------------------------------

TEST(ExpandV2KernelTest, GradMatchesFiniteDifferences) {
  struct Case {
    Dims x;
    std::vector<int> shape;
  };
  uint32_t seed = 40;
  for (const Case& c : {Case{{3, 1}, {2, 3, 4}}, Case{{1, 2, 1}, {3, -1, 2}},
                        Case{{2, 3}, {2, 3}}, Case{{1}, {4}}}) {
    OpTester t("expand_v2");
    t.Input("X", RandomTensor(c.x, -1, 1, seed++))
        .Output("Out")
        .Attr("shape", c.shape);
    EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
  }
}

TEST(ExpandV2KernelTest, BadShapesNameTheOp) {
  struct Case {
    std::vector<int> shape;
    std::string message;
  };
  for (const Case& c :
       {Case{{4}, "shape [4] has fewer entries than X [2,1] has dims"},
        Case{{-1, 2, 3},
             "entry 0 of shape [-1,2,3] is -1; a new dim needs a positive "
             "extent"},
        Case{{3, 3},
             "entry 0 of shape [3,3] is 3 but X [2,1] has extent 2 there"},
        Case{{2, 0},
             "entry 1 of shape [2,0] is 0; an extent is positive or -1"},
        Case{{2, -2}, "entry 1 of shape [2,-2] is -2"},
        Case{{1, 1, 1, 1, 1, 1, 1, 2, 1}, "has more than 8 entries"}}) {
    OpTester t("expand_v2");
    t.Input("X", RandomTensor({2, 1}, 0, 1, 1))
        .Output("Out")
        .Attr("shape", c.shape);
    EXPECT_THAT(RunError(t, "expand_v2"), HasSubstr(c.message));
  }
  // The same rules for a shape given as a tensor (shape_kernels_test.cc
  // has the rest of shapes as tensors).
  OpTester tensor("expand_v2");
  tensor.Input("X", RandomTensor({2, 1}, 0, 1, 1))
      .Input("Shape", MakeTensor<int32_t>({2}, {3, 3}))
      .Output("Out");
  EXPECT_THAT(RunError(tensor, "expand_v2"),
              HasSubstr("entry 0 of shape [3,3] is 3 but X [2,1]"));
}

TEST(ExpandV2SchemaTest, UnknownBatchAtCompileTime) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 1});
  block.Var("x")->SetDType(DType::kFP32);
  block.Var("out");
  OpDesc* op = block.AppendOp("expand_v2");
  op->SetInput("X", {"x"});
  op->SetOutput("Out", {"out"});
  op->SetAttr("shape", std::vector<int>{2, -1, 5});
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("out")->dims(), (Dims{2, -1, 5}));
}

// ---- where ------------------------------------------------------------------

TEST(WhereKernelTest, GradMatchesFiniteDifferences) {
  Tensor cond(DType::kBool, {3, 4});
  for (int64_t i = 0; i < cond.numel(); ++i)
    cond.data<bool>()[i] = (i * 7) % 3 == 0;
  OpTester t("where");
  t.Input("Condition", cond)
      .Input("X", RandomTensor({3, 4}, -1, 1, 60))
      .Input("Y", RandomTensor({3, 4}, -1, 1, 61))
      .Output("Out");
  EXPECT_THAT(t.CheckGrad({"X", "Y"}, {"Out"}), IsEmpty());
}

TEST(WhereKernelTest, BadInputsNameTheOp) {
  Tensor cond(DType::kBool, {2, 3});
  for (int64_t i = 0; i < cond.numel(); ++i) cond.data<bool>()[i] = i % 2 == 0;
  OpTester dims("where");
  dims.Input("Condition", cond)
      .Input("X", RandomTensor({2, 3}, 0, 1, 1))
      .Input("Y", RandomTensor({3}, 0, 1, 2))
      .Output("Out");
  EXPECT_THAT(RunError(dims, "where"), HasSubstr("X [2,3] and Y [3] differ"));
  OpTester cond_dims("where");
  cond_dims.Input("Condition", Tensor(DType::kBool, {3}))
      .Input("X", RandomTensor({2, 3}, 0, 1, 1))
      .Input("Y", RandomTensor({2, 3}, 0, 1, 2))
      .Output("Out");
  EXPECT_THAT(RunError(cond_dims, "where"),
              HasSubstr("Condition [3] and X [2,3] differ"));
  OpTester cond_dtype("where");
  cond_dtype.Input("Condition", RandomTensor({2, 3}, 0, 1, 3))
      .Input("X", RandomTensor({2, 3}, 0, 1, 1))
      .Input("Y", RandomTensor({2, 3}, 0, 1, 2))
      .Output("Out");
  EXPECT_THAT(RunError(cond_dtype, "where"),
              HasSubstr("Condition must be bool, got fp64"));
}

}  // namespace
}  // namespace parex::testing
