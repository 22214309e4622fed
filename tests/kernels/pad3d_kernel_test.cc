// Tests of pad3d and pad3d_grad (kernels/cpu/spatial/pad3d_kernel.cc, schema in
// graph/ir/ops/pad_ops.cc): values and Paddle's gradient op against
// PaddlePaddle 2.6.2 (paddle_goldens/pad3d.json), hand-written rows for each
// mode, gradients against finite differences, bad attributes and shapes,
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

TEST(Pad3dKernelTest, MatchesPaddle) {
  ExpectCpuKernels("pad3d", {DType::kFP32, DType::kFP64});
  ExpectCpuKernels("pad3d_grad", {DType::kFP32, DType::kFP64});
  EXPECT_EQ(CheckPaddleGoldens("pad3d", {1e-12, 1e-6}, "pad3d.json"), 5);
}

TEST(Pad3dKernelTest, EachModeOnOneRow) {
  // X = [1, 2, 3] along w; left 2, right 3.
  struct Case {
    std::string mode;
    std::vector<double> want;
  };
  const Case cases[] = {
      {"constant", {9, 9, 1, 2, 3, 9, 9, 9}},
      {"reflect", {3, 2, 1, 2, 3, 2, 1, 2}},
      {"replicate", {1, 1, 1, 2, 3, 3, 3, 3}},
      {"circular", {2, 3, 1, 2, 3, 1, 2, 3}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.mode);
    OpTester t("pad3d");
    t.Input("X", MakeTensor<double>({1, 1, 1, 1, 3}, {1, 2, 3}))
        .Output("Out")
        .Attr("paddings", std::vector<int>{2, 3, 0, 0, 0, 0})
        .Attr("mode", c.mode)
        .Attr("value", 9.0f);
    if (c.mode == "reflect") {
      // Reflect paddings stay below the extent: 3 is too many.
      t.Attr("paddings", std::vector<int>{2, 2, 0, 0, 0, 0});
      ASSERT_TRUE(t.Run().ok());
      EXPECT_EQ(
          CompareTensors(
              t.Out("Out"),
              MakeTensor<double>({1, 1, 1, 1, 7}, {3, 2, 1, 2, 3, 2, 1}), 0, 0),
          "");
      continue;
    }
    ASSERT_TRUE(t.Run().ok());
    EXPECT_EQ(CompareTensors(t.Out("Out"),
                             MakeTensor<double>({1, 1, 1, 1, 8}, c.want), 0, 0),
              "");
  }
}

TEST(Pad3dKernelTest, Gradients) {
  for (const std::string mode :
       {"constant", "reflect", "replicate", "circular"}) {
    SCOPED_TRACE(mode);
    OpTester t("pad3d");
    t.Input("X", RandomTensor({2, 2, 3, 3, 4}, -1, 1, 41))
        .Output("Out")
        .Attr("paddings", std::vector<int>{2, 1, 0, 2, 1, 2})
        .Attr("mode", mode)
        .Attr("value", 0.5f);
    EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
  }
}

TEST(Pad3dKernelTest, BadAttributesAndShapesNameTheOp) {
  struct Bad {
    const char* what;
    Dims x;
    std::vector<int> paddings;
    std::string mode;
  };
  const Bad cases[] = {
      {"paddings", {1, 1, 2, 2, 2}, {1, 1, 1, 1}, "constant"},
      {"negative", {1, 1, 2, 2, 2}, {1, -1, 0, 0, 0, 0}, "constant"},
      {"mode", {1, 1, 2, 2, 2}, {1, 1, 0, 0, 0, 0}, "edge"},
      {"reflect", {1, 1, 2, 2, 2}, {0, 0, 0, 0, 2, 0}, "reflect"},
      {"rank 5", {1, 2, 2, 2}, {1, 1, 0, 0, 0, 0}, "constant"},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.what);
    OpTester t("pad3d");
    t.Input("X", RandomTensor(c.x, -1, 1, 1))
        .Output("Out")
        .Attr("paddings", c.paddings)
        .Attr("mode", c.mode);
    const Status s = t.Run();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("'pad3d'"));
    EXPECT_THAT(s.message(), HasSubstr(c.what));
  }
  // A Paddings tensor wins over the attribute (shape_kernels_test.cc has
  // Paddle's golden and hostile values).
  OpTester t("pad3d");
  t.Input("X", RandomTensor({1, 1, 2, 2, 2}, -1, 1, 1))
      .Input("Paddings", MakeTensor<int32_t>({6}, {1, 0, 2, 1, 0, 3}))
      .Output("Out")
      .Attr("paddings", std::vector<int>{0, 0, 0, 0, 0, 0});
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(t.Out("Out").dims(), (Dims{1, 1, 5, 5, 3}));
}

TEST(Pad3dSchemaTest, UnknownBatchAtCompileTime) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 3, 4, 5, 6});
  block.Var("x")->SetDType(DType::kFP32);
  block.Var("y");
  OpDesc* op = block.AppendOp("pad3d");
  op->SetInput("X", {"x"});
  op->SetOutput("Out", {"y"});
  op->SetAttr("paddings", std::vector<int>{1, 2, 3, 0, 0, 1});
  op->SetAttr("mode", std::string("replicate"));
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("y")->dims(), (Dims{-1, 3, 5, 8, 9}));
  EXPECT_EQ(block.FindVar("y")->dtype(), DType::kFP32);
  EXPECT_TRUE(ValidateProgram(program).ok());
}

}  // namespace
}  // namespace parex::testing
