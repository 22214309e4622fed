// Tests of nearest_interp_v2 / bilinear_interp_v2 and their gradient ops
// (kernels/cpu/spatial/interp_kernels.cc, schema in
// graph/ir/ops/interp_ops.cc): values and Paddle's gradient op against
// PaddlePaddle 2.6.2 (paddle_goldens/interp.json), hand-computed values,
// gradients against finite differences, bad attributes and shapes, refused
// inputs and layouts, compile-time shapes.
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

const char* const kOps[] = {"nearest_interp_v2", "bilinear_interp_v2"};

TEST(InterpKernelTest, MatchesPaddle) {
  for (const char* op : kOps) {
    ExpectCpuKernels(op, {DType::kFP32, DType::kFP64});
    ExpectCpuKernels(std::string(op) + "_grad", {DType::kFP32, DType::kFP64});
  }
  EXPECT_EQ(
      CheckPaddleGoldens("bilinear_interp_v2", {1e-12, 1e-6}, "interp.json"),
      12);
  EXPECT_EQ(
      CheckPaddleGoldens("nearest_interp_v2", {1e-12, 1e-6}, "interp.json"), 8);
}

TEST(InterpKernelTest, HandComputed) {
  const Tensor x = MakeTensor<double>({1, 1, 2, 2}, {1, 2, 3, 4});
  {
    SCOPED_TRACE("bilinear, align_corners");
    OpTester t("bilinear_interp_v2");
    t.Input("X", x).Output("Out").Attr("out_h", 3).Attr("out_w", 3);
    ASSERT_TRUE(t.Run().ok());
    EXPECT_EQ(
        CompareTensors(
            t.Out("Out"),
            MakeTensor<double>({1, 1, 3, 3}, {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4}),
            0, 0),
        "");
  }
  {
    SCOPED_TRACE("bilinear, half-pixel");
    // Rows sample at 0 (clamped), 0.25, 0.75, 1.25 (its upper neighbour
    // clamped); columns alike.
    OpTester t("bilinear_interp_v2");
    t.Input("X", MakeTensor<double>({1, 1, 2, 1}, {1, 3}))
        .Output("Out")
        .Attr("out_h", 4)
        .Attr("out_w", 1)
        .Attr("align_corners", false)
        .Attr("align_mode", 0);
    ASSERT_TRUE(t.Run().ok());
    EXPECT_EQ(CompareTensors(t.Out("Out"),
                             MakeTensor<double>({1, 1, 4, 1}, {1, 1.5, 2.5, 3}),
                             0, 0),
              "");
  }
  {
    SCOPED_TRACE("nearest, scale");
    OpTester t("nearest_interp_v2");
    t.Input("X", x)
        .Output("Out")
        .Attr("interp_method", std::string("nearest"))
        .Attr("scale", std::vector<float>{2.0f, 1.5f})
        .Attr("align_corners", false);
    ASSERT_TRUE(t.Run().ok());
    EXPECT_EQ(
        CompareTensors(t.Out("Out"),
                       MakeTensor<double>({1, 1, 4, 3},
                                          {1, 1, 2, 1, 1, 2, 3, 3, 4, 3, 3, 4}),
                       0, 0),
        "");
  }
}

TEST(InterpKernelTest, Gradients) {
  struct Case {
    const char* op;
    std::string method;
    Dims x;
    std::vector<int> size;  // out_h, out_w, or empty
    std::vector<float> scale;
    bool align_corners;
    int align_mode;
  };
  const Case cases[] = {
      {"bilinear_interp_v2", "bilinear", {2, 2, 3, 4}, {5, 7}, {}, false, 0},
      {"bilinear_interp_v2", "bilinear", {1, 2, 6, 5}, {4, 3}, {}, true, 1},
      {"bilinear_interp_v2",
       "bilinear",
       {1, 1, 4, 3},
       {},
       {1.5f, 2.0f},
       false,
       1},
      {"bilinear_interp_v2",
       "bilinear",
       {2, 1, 5, 6},
       {},
       {0.6f, 0.5f},
       false,
       0},
      {"bilinear_interp_v2", "bilinear", {1, 1, 3, 3}, {3, 3}, {}, false, 0},
      {"nearest_interp_v2", "nearest", {2, 2, 3, 3}, {7, 5}, {}, false, 1},
      {"nearest_interp_v2", "nearest", {1, 2, 7, 6}, {}, {0.5f, 0.7f}, true, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.op) + " " + DimsToString(c.x));
    OpTester t(c.op);
    t.Input("X", RandomTensor(c.x, -1, 1, 43))
        .Output("Out")
        .Attr("interp_method", c.method)
        .Attr("align_corners", c.align_corners)
        .Attr("align_mode", c.align_mode);
    if (!c.size.empty()) t.Attr("out_h", c.size[0]).Attr("out_w", c.size[1]);
    if (!c.scale.empty()) t.Attr("scale", c.scale);
    EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
  }
}

struct Bad {
  const char* what;
  Dims x;
  std::function<void(OpTester&)> set;
};

TEST(InterpKernelTest, BadAttributesAndShapesNameTheOp) {
  const Bad cases[] = {
      {"out_h", {1, 1, 2, 2}, [](OpTester& t) { t.Attr("out_w", 3); }},
      {"out_w",
       {1, 1, 2, 2},
       [](OpTester& t) { t.Attr("out_h", 3).Attr("out_w", -1); }},
      {"scale",
       {1, 1, 2, 2},
       [](OpTester& t) { t.Attr("scale", std::vector<float>{2}); }},
      {"positive",
       {1, 1, 2, 2},
       [](OpTester& t) {
         t.Attr("scale", std::vector<float>{2, -1});
       }},
      {"empty output",
       {1, 1, 4, 4},
       [](OpTester& t) {
         t.Attr("scale", std::vector<float>{0.2f, 1});
       }},
      {"interp_method",
       {1, 1, 2, 2},
       [](OpTester& t) {
         t.Attr("out_h", 3)
             .Attr("out_w", 3)
             .Attr("interp_method", std::string("area"));
       }},
      {"align_mode",
       {1, 1, 2, 2},
       [](OpTester& t) {
         t.Attr("out_h", 3).Attr("out_w", 3).Attr("align_mode", 2);
       }},
      {"rank 4",
       {2, 2},
       [](OpTester& t) { t.Attr("out_h", 3).Attr("out_w", 3); }},
  };
  for (const char* op : kOps) {
    for (const Bad& c : cases) {
      SCOPED_TRACE(std::string(op) + " " + c.what);
      OpTester t(op);
      t.Input("X", RandomTensor(c.x, -1, 1, 1)).Output("Out");
      c.set(t);
      const Status s = t.Run();
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
      EXPECT_THAT(s.message(), HasSubstr(std::string("'") + op + "'"));
      EXPECT_THAT(s.message(), HasSubstr(c.what));
    }
  }
}

// Sizes and scales as tensors (graph/ir/spec/interp_spec.h): each source
// gives the extents, in Paddle's priority order, and hostile values are
// named.
TEST(InterpKernelTest, SizesFromTensors) {
  const Tensor two = MakeTensor<int32_t>({2}, {5, 3});
  struct Case {
    std::vector<std::pair<std::string, std::vector<Tensor>>> inputs;
    Dims out;  // or the error's text
    const char* error;
  };
  const std::vector<Case> cases = {
      {{{"OutSize", {two}}}, {1, 1, 5, 3}, nullptr},
      {{{"SizeTensor",
         {MakeTensor<int64_t>({1}, {3}), MakeTensor<int64_t>({1}, {6})}},
        {"OutSize", {two}}},
       {1, 1, 3, 6},
       nullptr},
      {{{"Scale", {MakeTensor<float>({2}, {2.0f, 1.5f})}}},
       {1, 1, 4, 3},
       nullptr},
      {{{"Scale", {MakeTensor<float>({1}, {3.0f})}}}, {1, 1, 6, 6}, nullptr},
      {{{"OutSize", {MakeTensor<int32_t>({2}, {-1, 4})}}},
       {},
       "out_h -1 (input OutSize) is outside [1, 2^31)"},
      {{{"OutSize", {MakeTensor<int64_t>({2}, {int64_t{1} << 40, 1})}}},
       {},
       "(input OutSize) is outside [1, 2^31)"},
      {{{"Scale", {MakeTensor<float>({2}, {0.0f, 1.0f})}}},
       {},
       "must be positive"},
      {{{"SizeTensor",
         {MakeTensor<int64_t>({1}, {3}), MakeTensor<int64_t>({1}, {3}),
          MakeTensor<int64_t>({1}, {3})}}},
       {},
       "SizeTensor gives 3 extents; it takes two"},
  };
  for (const char* op : kOps) {
    for (const Case& c : cases) {
      OpTester t(op);
      t.Input("X", RandomTensor({1, 1, 2, 2}, -1, 1, 1)).Output("Out");
      for (const auto& [slot, tensors] : c.inputs) t.Inputs(slot, tensors);
      const Status s = t.Run();
      if (c.error == nullptr) {
        ASSERT_TRUE(s.ok()) << s.ToString();
        EXPECT_EQ(t.Out("Out").dims(), c.out);
      } else {
        EXPECT_THAT(s.message(), HasSubstr(c.error)) << op;
        EXPECT_THAT(s.message(), HasSubstr(std::string("'") + op + "'"));
      }
    }
  }
}

TEST(InterpKernelTest, RefusedMethodsAndRanksAreUnimplemented) {
  for (const char* op : kOps) {
    const Bad refused[] = {
        {"bicubic",
         {1, 1, 2, 2},
         [](OpTester& t) {
           t.Attr("out_h", 3)
               .Attr("out_w", 3)
               .Attr("interp_method", std::string("bicubic"));
         }},
        {"rank 4",
         {1, 1, 2, 2, 2},
         [](OpTester& t) {
           t.Attr("out_d", 3).Attr("out_h", 3).Attr("out_w", 3);
         }},
    };
    for (const Bad& c : refused) {
      SCOPED_TRACE(std::string(op) + " " + c.what);
      OpTester t(op);
      t.Input("X", RandomTensor(c.x, -1, 1, 1)).Output("Out");
      c.set(t);
      const Status s = t.Run();
      EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.ToString();
      EXPECT_THAT(s.message(), HasSubstr(std::string("'") + op + "'"));
      EXPECT_THAT(s.message(), HasSubstr(c.what));
    }
  }
}

TEST(InterpSchemaTest, UnknownBatchAtCompileTime) {
  for (const char* type : kOps) {
    SCOPED_TRACE(type);
    Program program;
    Block& block = program.global_block();
    block.Var("x")->SetDims({-1, 3, 4, 5});
    block.Var("x")->SetDType(DType::kFP32);
    block.Var("z")->SetDims({-1, 3, -1, 5});
    block.Var("z")->SetDType(DType::kFP64);
    block.Var("y");
    block.Var("s");
    block.Var("t");
    OpDesc* op = block.AppendOp(type);
    op->SetInput("X", {"x"});
    op->SetOutput("Out", {"y"});
    op->SetAttr("out_h", 7);
    op->SetAttr("out_w", 2);
    OpDesc* by_scale = block.AppendOp(type);
    by_scale->SetInput("X", {"x"});
    by_scale->SetOutput("Out", {"s"});
    by_scale->SetAttr("scale", std::vector<float>{1.5f, 0.5f});
    OpDesc* unknown_h = block.AppendOp(type);
    unknown_h->SetInput("X", {"z"});
    unknown_h->SetOutput("Out", {"t"});
    unknown_h->SetAttr("scale", std::vector<float>{2.0f, 2.0f});
    for (OpDesc* o : {op, by_scale, unknown_h}) {
      ASSERT_TRUE(InferShapeAtCompileTime(*o, block, true).ok());
    }
    EXPECT_EQ(block.FindVar("y")->dims(), (Dims{-1, 3, 7, 2}));
    EXPECT_EQ(block.FindVar("y")->dtype(), DType::kFP32);
    EXPECT_EQ(block.FindVar("s")->dims(), (Dims{-1, 3, 6, 2}));
    EXPECT_EQ(block.FindVar("t")->dims(), (Dims{-1, 3, -1, 10}));
    EXPECT_EQ(block.FindVar("t")->dtype(), DType::kFP64);
    EXPECT_TRUE(ValidateProgram(program).ok());
  }
}

}  // namespace
}  // namespace parex::testing
