// Tests of pool3d and pool3d_grad (kernels/cpu/spatial/pool3d_kernel.cc, schema
// in graph/ir/ops/conv_ops.cc): values and Paddle's gradient op against
// PaddlePaddle 2.6.2 (paddle_goldens/pool3d.json), a hand-computed case,
// gradients against finite differences, bad attributes and shapes,
// compile-time shapes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/ir/op_schema.h"
#include "graph/ir/validate.h"
#include "tests/kernels/op_tester.h"
#include "tests/kernels/paddle_golden.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(Pool3dKernelTest, MatchesPaddle) {
  ExpectCpuKernels("pool3d", {DType::kFP32, DType::kFP64});
  ExpectCpuKernels("pool3d_grad", {DType::kFP32, DType::kFP64});
  // fp64 within 1e-8: Paddle 2.6.2's avg gradient scales by a float32
  // 1 / window (see make_goldens.py); parex divides in double.
  EXPECT_EQ(CheckPaddleGoldens("pool3d", {1e-8, 1e-6}, "pool3d.json"), 7);
}

TEST(Pool3dKernelTest, HandComputedTwoCubed) {
  // x = 1..8 over a 2x2x2 volume, padded by one in depth only, window 2,
  // stride 2 in depth: windows {pad, z=0} and {z=1, pad}.
  std::vector<double> v(8);
  for (int i = 0; i < 8; ++i) v[i] = i + 1;
  for (bool exclusive : {true, false}) {
    OpTester t("pool3d");
    t.Input("X", MakeTensor<double>({1, 1, 2, 2, 2}, v))
        .Output("Out")
        .Attr("pooling_type", std::string("avg"))
        .Attr("ksize", std::vector<int>{2, 2, 2})
        .Attr("strides", std::vector<int>{2, 1, 1})
        .Attr("paddings", std::vector<int>{1, 1, 0, 0, 0, 0})
        .Attr("exclusive", exclusive);
    ASSERT_TRUE(t.Run().ok());
    const double d = exclusive ? 4 : 8;
    EXPECT_EQ(CompareTensors(
                  t.Out("Out"),
                  MakeTensor<double>({1, 1, 2, 1, 1}, {(1 + 2 + 3 + 4) / d,
                                                       (5 + 6 + 7 + 8) / d}),
                  1e-15, 0),
              "");
  }
}

TEST(Pool3dKernelTest, Gradients) {
  struct GradCase {
    const char* name;
    std::string type;
    std::vector<int> ksize, strides, paddings;
    bool exclusive = true, global = false, ceil = false, adaptive = false;
  };
  const GradCase cases[] = {
      {"max_overlapping_padded", "max", {3, 2, 3}, {1, 2, 1}, {1, 0, 1}},
      {"max_six_paddings_ceil",
       "max",
       {2, 2, 2},
       {2, 2, 2},
       {1, 0, 0, 1, 1, 0},
       true,
       false,
       true},
      {"max_global", "max", {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, true, true},
      {"avg_padded_exclusive", "avg", {3, 3, 2}, {2, 2, 1}, {1, 1, 0}},
      {"avg_padded_inclusive", "avg", {3, 3, 2}, {2, 2, 1}, {1, 1, 0}, false},
      {"avg_adaptive",
       "avg",
       {2, 3, 2},
       {1, 1, 1},
       {0, 0, 0},
       true,
       false,
       false,
       true},
      {"max_adaptive",
       "max",
       {3, 2, 2},
       {1, 1, 1},
       {0, 0, 0},
       true,
       false,
       false,
       true},
  };
  for (const GradCase& c : cases) {
    SCOPED_TRACE(c.name);
    OpTester t("pool3d");
    t.Input("X", DistinctRandomTensor({2, 2, 4, 5, 4}, -1, 1, 3))
        .Output("Out")
        .Attr("pooling_type", c.type)
        .Attr("ksize", c.ksize)
        .Attr("strides", c.strides)
        .Attr("paddings", c.paddings)
        .Attr("exclusive", c.exclusive)
        .Attr("global_pooling", c.global)
        .Attr("ceil_mode", c.ceil)
        .Attr("adaptive", c.adaptive);
    EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
  }
}

TEST(Pool3dKernelTest, BadAttributesAndShapesNameTheOp) {
  struct Bad {
    const char* what;
    Dims x;
    std::string type;
    std::vector<int> ksize, paddings;
  };
  const Bad cases[] = {
      {"ksize", {1, 1, 4, 4, 4}, "max", {2, 2}, {0, 0, 0}},
      {"pooling_type", {1, 1, 4, 4, 4}, "min", {2, 2, 2}, {0, 0, 0}},
      {"paddings", {1, 1, 4, 4, 4}, "max", {2, 2, 2}, {0, 0, 0, 0}},
      {"rank 5", {1, 4, 4, 4}, "max", {2, 2, 2}, {0, 0, 0}},
      {"window", {1, 1, 1, 4, 4}, "avg", {2, 2, 2}, {0, 0, 0}},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.what);
    OpTester t("pool3d");
    t.Input("X", RandomTensor(c.x, -1, 1, 1))
        .Output("Out")
        .Attr("pooling_type", c.type)
        .Attr("ksize", c.ksize)
        .Attr("paddings", c.paddings);
    const Status s = t.Run();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("'pool3d'"));
    EXPECT_THAT(s.message(), HasSubstr(c.what));
  }
  // NDHWC runs (channels_last.h); a 2-D layout names the op.
  OpTester t("pool3d");
  t.Input("X", RandomTensor({1, 4, 4, 4, 1}, -1, 1, 1))
      .Output("Out")
      .Attr("ksize", std::vector<int>{2, 2, 2})
      .Attr("data_format", std::string("NHWC"));
  const Status s = t.Run();
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("'pool3d'"));
  EXPECT_THAT(s.message(), HasSubstr("data_format 'NHWC'"));
}

TEST(Pool3dSchemaTest, UnknownBatchAtCompileTime) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 3, 8, 9, 10});
  block.Var("x")->SetDType(DType::kFP64);
  block.Var("y");
  OpDesc* op = block.AppendOp("pool3d");
  op->SetInput("X", {"x"});
  op->SetOutput("Out", {"y"});
  op->SetAttr("pooling_type", std::string("avg"));
  op->SetAttr("ksize", std::vector<int>{2, 3, 3});
  op->SetAttr("strides", std::vector<int>{2, 2, 3});
  op->SetAttr("paddings", std::vector<int>{0, 1, 1});
  op->SetAttr("ceil_mode", true);
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  // depth (8-2)/2+1 = 4; height ceil((11-3)/2)+1 = 5; width ceil((12-3)/3)+1
  // = 4.
  EXPECT_EQ(block.FindVar("y")->dims(), (Dims{-1, 3, 4, 5, 4}));
  EXPECT_EQ(block.FindVar("y")->dtype(), DType::kFP64);
  EXPECT_TRUE(ValidateProgram(program).ok());
}

}  // namespace
}  // namespace parex::testing
