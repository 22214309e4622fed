// Tests of conv2d_transpose and its gradient op
// (kernels/cpu/spatial/conv_transpose_kernel.cc, schema in
// graph/ir/ops/conv_transpose_ops.cc): values and Paddle's gradient op
// against PaddlePaddle 2.6.2 (paddle_goldens/conv2d_transpose.json), values
// against a scatter loop written here, gradients against finite
// differences, bad attributes and shapes, compile-time shapes.
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

struct TransposeParams {
  int groups = 1;
  std::vector<int> strides{1, 1};
  std::vector<int> paddings{0, 0, 0, 0};  // top, bottom, left, right
  std::vector<int> dilations{1, 1};
  std::vector<int> output_padding{0, 0};
};

// The definition: every input element in[n][c][y][x] adds
// in * f[c][mg][i][j] to out[n][g*Mg + mg][y*sh - pt + i*dh][x*sw - pl + j*dw]
// where that lies inside the output.
Tensor ScatterTranspose(const Tensor& input, const Tensor& filter,
                        const TransposeParams& p) {
  const int n_ = input.dim(0), c_ = input.dim(1), h_ = input.dim(2),
            w_ = input.dim(3);
  const int mg = filter.dim(1), kh = filter.dim(2), kw = filter.dim(3);
  const int m_ = mg * p.groups, cg = c_ / p.groups;
  const int oh = (h_ - 1) * p.strides[0] - p.paddings[0] - p.paddings[1] +
                 p.dilations[0] * (kh - 1) + 1 + p.output_padding[0];
  const int ow = (w_ - 1) * p.strides[1] - p.paddings[2] - p.paddings[3] +
                 p.dilations[1] * (kw - 1) + 1 + p.output_padding[1];
  Tensor out(DType::kFP64, {n_, m_, oh, ow});
  double* o = out.data<double>();
  for (int64_t i = 0; i < out.numel(); ++i) o[i] = 0;
  const double* in = input.data<double>();
  const double* f = filter.data<double>();
  for (int n = 0; n < n_; ++n) {
    for (int c = 0; c < c_; ++c) {
      for (int y = 0; y < h_; ++y) {
        for (int x = 0; x < w_; ++x) {
          for (int m = 0; m < mg; ++m) {
            for (int i = 0; i < kh; ++i) {
              for (int j = 0; j < kw; ++j) {
                const int oy =
                    y * p.strides[0] - p.paddings[0] + i * p.dilations[0];
                const int ox =
                    x * p.strides[1] - p.paddings[2] + j * p.dilations[1];
                if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
                const int om = (c / cg) * mg + m;
                o[((n * m_ + om) * oh + oy) * ow + ox] +=
                    in[((n * c_ + c) * h_ + y) * w_ + x] *
                    f[((c * mg + m) * kh + i) * kw + j];
              }
            }
          }
        }
      }
    }
  }
  return out;
}

OpTester& SetTransposeAttrs(OpTester& t, const TransposeParams& p) {
  return t.Attr("groups", p.groups)
      .Attr("strides", p.strides)
      .Attr("paddings", p.paddings)
      .Attr("dilations", p.dilations)
      .Attr("output_padding", p.output_padding);
}

TEST(ConvTransposeKernelTest, MatchesPaddle) {
  ExpectCpuKernels("conv2d_transpose", {DType::kFP32, DType::kFP64});
  ExpectCpuKernels("conv2d_transpose_grad", {DType::kFP32, DType::kFP64});
  EXPECT_EQ(CheckPaddleGoldens("conv2d_transpose", {1e-12, 1e-5},
                               "conv2d_transpose.json"),
            5);
}

struct TransposeCase {
  const char* name;
  Dims input, filter;
  TransposeParams params;
};

TEST(ConvTransposeKernelTest, MatchesScatterLoopAndGradients) {
  const TransposeCase cases[] = {
      {"plain", {2, 2, 3, 3}, {2, 3, 2, 2}, {}},
      {"groups2_stride2_pad",
       {1, 4, 3, 4},
       {4, 2, 3, 3},
       {2, {2, 2}, {1, 0, 0, 1}, {1, 1}, {1, 0}}},
      {"dilation2_stride3",
       {1, 2, 3, 2},
       {2, 1, 2, 3},
       {1, {3, 1}, {0, 1, 2, 0}, {2, 2}, {2, 1}}},
      {"one_by_one", {2, 3, 2, 2}, {3, 2, 1, 1}, {}},
  };
  for (const TransposeCase& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor input = RandomTensor(c.input, -1, 1, 21);
    Tensor filter = RandomTensor(c.filter, -1, 1, 22);
    OpTester t("conv2d_transpose");
    t.Input("Input", input).Input("Filter", filter).Output("Output");
    SetTransposeAttrs(t, c.params);
    ASSERT_TRUE(t.Run().ok());
    EXPECT_EQ(
        CompareTensors(t.Out("Output"),
                       ScatterTranspose(input, filter, c.params), 1e-12, 1e-12),
        "");
    EXPECT_THAT(t.CheckGrad({"Input", "Filter"}, {"Output"}), IsEmpty());
  }
}

TEST(ConvTransposeKernelTest, BadAttributesAndShapesNameTheOp) {
  struct Bad {
    const char* what;
    Dims input, filter;
    TransposeParams params;
    std::vector<int> output_size;
  };
  const Bad cases[] = {
      {"channels", {1, 3, 3, 3}, {2, 2, 2, 2}, {}, {}},
      {"groups",
       {1, 3, 3, 3},
       {3, 2, 2, 2},
       {2, {1, 1}, {0, 0, 0, 0}, {1, 1}, {0, 0}},
       {}},
      {"output_padding",
       {1, 2, 3, 3},
       {2, 2, 2, 2},
       {1, {2, 2}, {0, 0, 0, 0}, {1, 1}, {2, 0}},
       {}},
      {"output_size",
       {1, 2, 3, 3},
       {2, 2, 2, 2},
       {1, {2, 2}, {0, 0, 0, 0}, {1, 1}, {0, 0}},
       {9, 6}},
      {"paddings",
       {1, 2, 1, 1},
       {2, 2, 1, 1},
       {1, {1, 1}, {1, 1, 0, 0}, {1, 1}, {0, 0}},
       {}},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.what);
    OpTester t("conv2d_transpose");
    t.Input("Input", RandomTensor(c.input, -1, 1, 1))
        .Input("Filter", RandomTensor(c.filter, -1, 1, 2))
        .Output("Output");
    SetTransposeAttrs(t, c.params);
    t.Attr("output_size", c.output_size);
    const Status s = t.Run();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("'conv2d_transpose'"));
    EXPECT_THAT(s.message(), HasSubstr(c.what));
  }
  OpTester bias("conv2d_transpose");
  bias.Input("Input", RandomTensor({1, 2, 3, 3}, -1, 1, 1))
      .Input("Filter", RandomTensor({2, 2, 2, 2}, -1, 1, 2))
      .Input("Bias", RandomTensor({2}, -1, 1, 3))
      .Output("Output");
  const Status s = bias.Run();
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("'conv2d_transpose'"));
  EXPECT_THAT(s.message(), HasSubstr("'Bias'"));
}

TEST(ConvTransposeSchemaTest, UnknownBatchAtCompileTime) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 8, 7, 7});
  block.Var("x")->SetDType(DType::kFP32);
  block.Var("w")->SetDims({8, 4, 4, 4});
  block.Var("w")->SetDType(DType::kFP32);
  block.Var("y");
  OpDesc* op = block.AppendOp("conv2d_transpose");
  op->SetInput("Input", {"x"});
  op->SetInput("Filter", {"w"});
  op->SetOutput("Output", {"y"});
  op->SetAttr("groups", 2);
  op->SetAttr("strides", std::vector<int>{2, 2});
  op->SetAttr("paddings", std::vector<int>{1, 1});
  op->SetAttr("output_size", std::vector<int>{15, 14});
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("y")->dims(), (Dims{-1, 8, 15, 14}));
  EXPECT_EQ(block.FindVar("y")->dtype(), DType::kFP32);
  EXPECT_TRUE(ValidateProgram(program).ok());
}

}  // namespace
}  // namespace parex::testing
