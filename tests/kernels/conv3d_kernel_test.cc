// Tests of conv3d and conv3d_grad (the conv2d kernels over volumes,
// kernels/cpu/spatial/conv2d_kernel.cc and im2col.h's Vol2Col; schema in
// graph/ir/ops/conv_ops.cc): values and Paddle's gradient op against
// PaddlePaddle 2.6.2 (paddle_goldens/conv3d.json), values against a direct
// loop written here, gradients against finite differences, bad attributes
// and shapes, compile-time shapes.
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

struct Conv3dParams {
  int groups = 1;
  std::vector<int> strides{1, 1, 1};
  std::vector<int> paddings{0, 0, 0, 0, 0, 0};  // {before, after} per dim
  std::vector<int> dilations{1, 1, 1};
};

// out[n][m][o0][o1][o2] = sum over the group's channels and taps t of
// in[n][c][o*stride - pad_before + t*dilation] * f[m][c][t], zero outside.
Tensor DirectConv3d(const Tensor& input, const Tensor& filter,
                    const Conv3dParams& p) {
  const int n_ = input.dim(0), c_ = input.dim(1), m_ = filter.dim(0),
            cg = filter.dim(1);
  int in[3], k[3], out[3];
  for (int i = 0; i < 3; ++i) {
    in[i] = input.dim(2 + i);
    k[i] = filter.dim(2 + i);
    out[i] = (in[i] + p.paddings[2 * i] + p.paddings[2 * i + 1] -
              (p.dilations[i] * (k[i] - 1) + 1)) /
                 p.strides[i] +
             1;
  }
  Tensor result(DType::kFP64, {n_, m_, out[0], out[1], out[2]});
  double* o = result.data<double>();
  const double* x = input.data<double>();
  const double* f = filter.data<double>();
  const int mg = m_ / p.groups;
  int64_t at = 0;
  for (int n = 0; n < n_; ++n) {
    for (int m = 0; m < m_; ++m) {
      for (int a = 0; a < out[0]; ++a) {
        for (int b = 0; b < out[1]; ++b) {
          for (int e = 0; e < out[2]; ++e) {
            double sum = 0;
            for (int c = 0; c < cg; ++c) {
              const int ci = (m / mg) * cg + c;
              for (int t0 = 0; t0 < k[0]; ++t0) {
                for (int t1 = 0; t1 < k[1]; ++t1) {
                  for (int t2 = 0; t2 < k[2]; ++t2) {
                    const int z =
                        a * p.strides[0] - p.paddings[0] + t0 * p.dilations[0];
                    const int y =
                        b * p.strides[1] - p.paddings[2] + t1 * p.dilations[1];
                    const int w =
                        e * p.strides[2] - p.paddings[4] + t2 * p.dilations[2];
                    if (z < 0 || z >= in[0] || y < 0 || y >= in[1] || w < 0 ||
                        w >= in[2]) {
                      continue;
                    }
                    sum +=
                        x[(((n * c_ + ci) * in[0] + z) * in[1] + y) * in[2] +
                          w] *
                        f[(((m * cg + c) * k[0] + t0) * k[1] + t1) * k[2] + t2];
                  }
                }
              }
            }
            o[at++] = sum;
          }
        }
      }
    }
  }
  return result;
}

TEST(Conv3dKernelTest, MatchesPaddle) {
  ExpectCpuKernels("conv3d", {DType::kFP32, DType::kFP64});
  ExpectCpuKernels("conv3d_grad", {DType::kFP32, DType::kFP64});
  EXPECT_EQ(CheckPaddleGoldens("conv3d", {1e-12, 1e-5}, "conv3d.json"), 5);
}

TEST(Conv3dKernelTest, MatchesDirectLoopAndGradients) {
  struct Case {
    const char* name;
    Dims input, filter;
    Conv3dParams params;
  };
  const Case cases[] = {
      {"plain", {2, 2, 3, 4, 3}, {3, 2, 2, 2, 2}, {}},
      {"groups2_stride_pad_dilation",
       {1, 4, 5, 4, 5},
       {4, 2, 2, 3, 2},
       {2, {2, 1, 2}, {1, 0, 0, 1, 1, 1}, {2, 1, 1}}},
      {"one_by_one", {2, 3, 2, 3, 2}, {2, 3, 1, 1, 1}, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor input = RandomTensor(c.input, -1, 1, 31);
    Tensor filter = RandomTensor(c.filter, -1, 1, 32);
    OpTester t("conv3d");
    t.Input("Input", input)
        .Input("Filter", filter)
        .Output("Output")
        .Attr("groups", c.params.groups)
        .Attr("strides", c.params.strides)
        .Attr("paddings", c.params.paddings)
        .Attr("dilations", c.params.dilations);
    ASSERT_TRUE(t.Run().ok());
    EXPECT_EQ(
        CompareTensors(t.Out("Output"), DirectConv3d(input, filter, c.params),
                       1e-12, 1e-12),
        "");
    EXPECT_THAT(t.CheckGrad({"Input", "Filter"}, {"Output"}), IsEmpty());
  }
}

TEST(Conv3dKernelTest, BadAttributesAndShapesNameTheOp) {
  struct Bad {
    const char* what;
    Dims input, filter;
    std::vector<int> strides, paddings;
  };
  const Bad cases[] = {
      {"channels", {1, 3, 4, 4, 4}, {2, 2, 2, 2, 2}, {1, 1, 1}, {0, 0, 0}},
      {"strides", {1, 2, 4, 4, 4}, {2, 2, 2, 2, 2}, {1, 1}, {0, 0, 0}},
      {"paddings", {1, 2, 4, 4, 4}, {2, 2, 2, 2, 2}, {1, 1, 1}, {0, 0}},
      {"rank 5", {1, 2, 4, 4}, {2, 2, 2, 2}, {1, 1, 1}, {0, 0, 0}},
      {"depth", {1, 2, 1, 4, 4}, {2, 2, 2, 2, 2}, {1, 1, 1}, {0, 0, 0}},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.what);
    OpTester t("conv3d");
    t.Input("Input", RandomTensor(c.input, -1, 1, 1))
        .Input("Filter", RandomTensor(c.filter, -1, 1, 2))
        .Output("Output")
        .Attr("strides", c.strides)
        .Attr("paddings", c.paddings);
    const Status s = t.Run();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("'conv3d'"));
    EXPECT_THAT(s.message(), HasSubstr(c.what));
  }
}

TEST(Conv3dSchemaTest, UnknownBatchAtCompileTime) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 4, 8, 9, 10});
  block.Var("x")->SetDType(DType::kFP32);
  block.Var("w")->SetDims({6, 2, 3, 3, 3});
  block.Var("w")->SetDType(DType::kFP32);
  block.Var("y");
  OpDesc* op = block.AppendOp("conv3d");
  op->SetInput("Input", {"x"});
  op->SetInput("Filter", {"w"});
  op->SetOutput("Output", {"y"});
  op->SetAttr("groups", 2);
  op->SetAttr("strides", std::vector<int>{2, 2, 2});
  op->SetAttr("paddings", std::vector<int>{1, 1, 1});
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("y")->dims(), (Dims{-1, 6, 4, 5, 5}));
  EXPECT_EQ(block.FindVar("y")->dtype(), DType::kFP32);
  EXPECT_TRUE(ValidateProgram(program).ok());
}

}  // namespace
}  // namespace parex::testing
