// Tests of conv2d and conv2d_grad (kernels/cpu/spatial/conv2d_kernel.cc, schema
// in graph/ir/ops/conv_ops.cc): forward values against a direct 7-loop
// convolution written here, gradients against finite differences, shape
// errors and compile-time shapes; depthwise_conv2d against PaddlePaddle
// 2.6.2 (paddle_goldens/depthwise_conv2d.json) and finite differences.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/ir/op_schema.h"
#include "graph/ir/validate.h"
#include "kernels/device_context.h"
#include "kernels/op_runner.h"
#include "tests/kernels/op_tester.h"
#include "tests/kernels/paddle_golden.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct ConvParams {
  int groups = 1;
  std::vector<int> strides{1, 1};
  std::vector<int> paddings{0, 0, 0, 0};  // top, bottom, left, right
  std::vector<int> dilations{1, 1};
};

// The convolution by definition: out[n][m][oy][ox] = sum over the group's
// channels c and taps (i, j) of in[n][c][oy*sh - pt + i*dh][ox*sw - pl + j*dw]
// * f[m][c][i][j], zero outside the image.
Tensor DirectConv(const Tensor& input, const Tensor& filter,
                  const ConvParams& p) {
  const int n_ = input.dim(0), c_ = input.dim(1), h_ = input.dim(2),
            w_ = input.dim(3);
  const int m_ = filter.dim(0), cg = filter.dim(1), kh = filter.dim(2),
            kw = filter.dim(3);
  const int oh =
      (h_ + p.paddings[0] + p.paddings[1] - (p.dilations[0] * (kh - 1) + 1)) /
          p.strides[0] +
      1;
  const int ow =
      (w_ + p.paddings[2] + p.paddings[3] - (p.dilations[1] * (kw - 1) + 1)) /
          p.strides[1] +
      1;
  const double* in = input.data<double>();
  const double* f = filter.data<double>();
  Tensor out(DType::kFP64, {n_, m_, oh, ow});
  double* o = out.data<double>();
  const int mg = m_ / p.groups;
  for (int n = 0; n < n_; ++n) {
    for (int m = 0; m < m_; ++m) {
      for (int oy = 0; oy < oh; ++oy) {
        for (int ox = 0; ox < ow; ++ox) {
          double sum = 0;
          for (int c = 0; c < cg; ++c) {
            for (int i = 0; i < kh; ++i) {
              for (int j = 0; j < kw; ++j) {
                const int y =
                    oy * p.strides[0] - p.paddings[0] + i * p.dilations[0];
                const int x =
                    ox * p.strides[1] - p.paddings[2] + j * p.dilations[1];
                if (y < 0 || y >= h_ || x < 0 || x >= w_) continue;
                const int ci = (m / mg) * cg + c;
                sum += in[((n * c_ + ci) * h_ + y) * w_ + x] *
                       f[((m * cg + c) * kh + i) * kw + j];
              }
            }
          }
          o[((n * m_ + m) * oh + oy) * ow + ox] = sum;
        }
      }
    }
  }
  return out;
}

OpTester& SetConvAttrs(OpTester& t, const ConvParams& p) {
  return t.Attr("groups", p.groups)
      .Attr("strides", p.strides)
      .Attr("paddings", p.paddings)
      .Attr("dilations", p.dilations);
}

struct ForwardCase {
  const char* name;
  Dims input, filter;
  ConvParams params;
};

TEST(Conv2dKernelTest, MatchesDirectConvolution) {
  const ForwardCase cases[] = {
      {"plain", {2, 3, 5, 5}, {4, 3, 3, 3}, {}},
      {"groups2_stride2_pad1",
       {1, 4, 6, 5},
       {6, 2, 3, 3},
       {2, {2, 2}, {1, 1, 1, 1}, {1, 1}}},
      {"dilation2_asymmetric_pad",
       {1, 2, 7, 6},
       {3, 2, 3, 2},
       {1, {1, 2}, {1, 0, 2, 1}, {2, 2}}},
      {"depthwise",
       {1, 3, 4, 4},
       {3, 1, 2, 2},
       {3, {1, 1}, {0, 0, 0, 0}, {1, 1}}},
      {"one_by_one", {2, 3, 3, 4}, {5, 3, 1, 1}, {}},
      {"one_by_one_strided",
       {1, 2, 5, 5},
       {2, 2, 1, 1},
       {1, {2, 2}, {0, 0, 0, 0}, {1, 1}}},
  };
  for (const ForwardCase& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor input = RandomTensor(c.input, -1, 1, 1);
    Tensor filter = RandomTensor(c.filter, -1, 1, 2);
    OpTester t("conv2d");
    t.Input("Input", input).Input("Filter", filter).Output("Output");
    SetConvAttrs(t, c.params);
    ASSERT_TRUE(t.Run().ok());
    EXPECT_EQ(CompareTensors(t.Out("Output"),
                             DirectConv(input, filter, c.params), 1e-12, 1e-12),
              "");
  }
}

TEST(Conv2dKernelTest, TwoEntryPaddingsAndFp32) {
  Tensor input = RandomTensor({1, 2, 4, 4}, -1, 1, 3);
  Tensor filter = RandomTensor({3, 2, 3, 3}, -1, 1, 4);
  ConvParams p;
  p.paddings = {1, 1, 1, 1};
  Tensor want = DirectConv(input, filter, p);
  OpTester t("conv2d");
  t.Input("Input", RandomTensor({1, 2, 4, 4}, -1, 1, 3, DType::kFP32))
      .Input("Filter", RandomTensor({3, 2, 3, 3}, -1, 1, 4, DType::kFP32))
      .Output("Output")
      .Attr("paddings", std::vector<int>{1, 1});
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(t.Out("Output").dtype(), DType::kFP32);
  EXPECT_EQ(CompareTensors(t.Out("Output"), want, 1e-5, 1e-5), "");
}

TEST(Conv2dKernelTest, SameAndValidPadding) {
  Tensor input = RandomTensor({1, 1, 5, 5}, -1, 1, 5);
  Tensor filter = RandomTensor({2, 1, 3, 3}, -1, 1, 6);
  // SAME, stride 2: out = ceil(5/2) = 3, padding sum (3-1)*2+3-5 = 2 -> 1,1.
  ConvParams same;
  same.strides = {2, 2};
  same.paddings = {1, 1, 1, 1};
  OpTester t("conv2d");
  t.Input("Input", input)
      .Input("Filter", filter)
      .Output("Output")
      .Attr("strides", std::vector<int>{2, 2})
      .Attr("paddings", std::vector<int>{0, 0})
      .Attr("padding_algorithm", std::string("SAME"));
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(CompareTensors(t.Out("Output"), DirectConv(input, filter, same),
                           1e-12, 1e-12),
            "");

  OpTester v("conv2d");
  v.Input("Input", input)
      .Input("Filter", filter)
      .Output("Output")
      .Attr("paddings", std::vector<int>{2, 2})
      .Attr("padding_algorithm", std::string("VALID"));
  ASSERT_TRUE(v.Run().ok());
  EXPECT_EQ(CompareTensors(v.Out("Output"), DirectConv(input, filter, {}),
                           1e-12, 1e-12),
            "");
}

TEST(Conv2dKernelTest, HandComputedOneChannel) {
  // 3x3 image, 2x2 all-ones filter: each output sums a 2x2 block.
  OpTester t("conv2d");
  t.Input("Input",
          MakeTensor<double>({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}))
      .Input("Filter", MakeTensor<double>({1, 1, 2, 2}, {1, 1, 1, 1}))
      .Output("Output");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(
      CompareTensors(t.Out("Output"),
                     MakeTensor<double>({1, 1, 2, 2}, {12, 16, 24, 28}), 0, 0),
      "");
}

TEST(Conv2dKernelTest, OptionalBiasIsAddedPerChannel) {
  Tensor input = RandomTensor({1, 2, 3, 3}, -1, 1, 7);
  Tensor filter = RandomTensor({2, 2, 2, 2}, -1, 1, 8);
  Tensor want = DirectConv(input, filter, {});
  for (int64_t i = 0; i < want.numel(); ++i) {
    want.data<double>()[i] += i < 4 ? 0.5 : -2.0;
  }
  OpTester t("conv2d");
  t.Input("Input", input)
      .Input("Filter", filter)
      .Input("Bias", MakeTensor<double>({2}, {0.5, -2.0}))
      .Output("Output");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(CompareTensors(t.Out("Output"), want, 1e-12, 1e-12), "");
}

struct GradCase {
  const char* name;
  Dims input, filter;
  ConvParams params;
};

TEST(Conv2dKernelTest, Gradients) {
  const GradCase cases[] = {
      {"plain", {2, 2, 4, 4}, {3, 2, 2, 2}, {}},
      {"groups2",
       {1, 4, 4, 4},
       {4, 2, 2, 2},
       {2, {1, 1}, {0, 0, 0, 0}, {1, 1}}},
      {"stride2_pad1",
       {2, 2, 4, 4},
       {2, 2, 3, 3},
       {1, {2, 2}, {1, 1, 1, 1}, {1, 1}}},
      {"dilation2",
       {1, 2, 6, 6},
       {2, 2, 2, 2},
       {1, {1, 1}, {1, 0, 0, 1}, {2, 2}}},
      {"groups2_stride2_pad1_dilation2",
       {1, 4, 4, 4},
       {2, 2, 2, 2},
       {2, {2, 2}, {1, 1, 1, 1}, {2, 2}}},
      {"one_by_one", {2, 3, 3, 3}, {2, 3, 1, 1}, {}},
  };
  for (const GradCase& c : cases) {
    SCOPED_TRACE(c.name);
    OpTester t("conv2d");
    t.Input("Input", RandomTensor(c.input, -1, 1, 9))
        .Input("Filter", RandomTensor(c.filter, -1, 1, 10))
        .Output("Output");
    SetConvAttrs(t, c.params);
    EXPECT_THAT(t.CheckGrad({"Input", "Filter"}, {"Output"}), IsEmpty());
  }
}

TEST(Conv2dKernelTest, GradOpSumsBiasGradient) {
  // conv2d_grad of a program whose conv2d carries Bias: Bias@GRAD[m] is the
  // sum of Output@GRAD over batch and plane.
  OpTester t("conv2d");
  t.Input("Input", RandomTensor({2, 1, 3, 3}, -1, 1, 1))
      .Input("Filter", RandomTensor({2, 1, 2, 2}, -1, 1, 2))
      .Input("Bias", MakeTensor<double>({2}, {0, 0}))
      .Output("Output");
  ASSERT_TRUE(t.Run().ok());
  Block& block = t.program().global_block();
  Tensor dout = MakeTensor<double>({2, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8,  //
                                                  1, 1, 1, 1, 2, 2, 2, 2});
  block.Var("dout")->SetDType(DType::kFP64);
  block.Var("dout")->SetDims(dout.dims());
  *t.scope().Var("dout")->GetMutableTensor() = dout;
  block.Var("dbias");
  OpDesc* grad = block.AppendOp("conv2d_grad");
  grad->SetInput("Input", {"Input_0"});
  grad->SetInput("Filter", {"Filter_0"});
  grad->SetInput("Bias", {"Bias_0"});
  grad->SetInput("Output@GRAD", {"dout"});
  grad->SetOutput("Bias@GRAD", {"dbias"});
  ASSERT_TRUE(ValidateOp(*grad, block).ok());
  CpuDeviceContext device;
  ASSERT_TRUE(RunOp(*grad, &t.scope(), &device).ok());
  EXPECT_EQ(CompareTensors(*t.scope().FindVar("dbias")->GetTensor(),
                           MakeTensor<double>({2}, {10 + 4, 26 + 8}), 0, 0),
            "");
}

TEST(Conv2dKernelTest, ChannelMismatchIsAnError) {
  OpTester t("conv2d");
  t.Input("Input", RandomTensor({1, 3, 5, 5}, -1, 1, 1))
      .Input("Filter", RandomTensor({4, 2, 3, 3}, -1, 1, 2))
      .Output("Output");
  Status s = t.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("'conv2d'"));
  EXPECT_THAT(s.message(), HasSubstr("channels"));
}

TEST(Conv2dKernelTest, FilterLargerThanImageIsAnError) {
  OpTester t("conv2d");
  t.Input("Input", RandomTensor({1, 1, 2, 2}, -1, 1, 1))
      .Input("Filter", RandomTensor({1, 1, 3, 3}, -1, 1, 2))
      .Output("Output");
  Status s = t.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("'conv2d'"));
}

// Channels-last (graph/ir/spec/channels_last.h, kernels/channels_last.h):
// conv2d, depthwise_conv2d, pool2d, conv2d_transpose, the interps,
// pixel_shuffle and prelu with data_format NHWC, and conv3d, pool3d and
// pad3d with NDHWC, against
// Paddle's goldens (channels_last.json; fp64 within 1e-9: Paddle's NHWC
// gradients sum in another order) and finite differences, and the shapes
// they declare at compile time.
TEST(ChannelsLastTest, MatchesPaddle) {
  EXPECT_EQ(CheckPaddleGoldens("conv2d", {1e-9, 1e-5}, "channels_last.json"),
            2);
  EXPECT_EQ(CheckPaddleGoldens("depthwise_conv2d", {1e-9, 1e-5},
                               "channels_last.json"),
            1);
  // Paddle's NHWC average-pool gradient divides with a float window size
  // (3e-8 relative off the fp64 quotient).
  EXPECT_EQ(CheckPaddleGoldens("pool2d", {1e-7, 1e-5}, "channels_last.json"),
            2);
  EXPECT_EQ(CheckPaddleGoldens("conv2d_transpose", {1e-9, 1e-5},
                               "channels_last.json"),
            1);
  EXPECT_EQ(CheckPaddleGoldens("bilinear_interp_v2", {1e-9, 1e-5},
                               "channels_last.json"),
            1);
  EXPECT_EQ(CheckPaddleGoldens("nearest_interp_v2", {1e-9, 1e-5},
                               "channels_last.json"),
            1);
  EXPECT_EQ(
      CheckPaddleGoldens("pixel_shuffle", {1e-12, 1e-5}, "channels_last.json"),
      1);
  // channel mode with Alpha [1, 1, 1, C] and [C], element and all.
  EXPECT_EQ(CheckPaddleGoldens("prelu", {1e-9, 1e-5}, "channels_last.json"), 4);
  EXPECT_EQ(CheckPaddleGoldens("pad3d", {1e-12, 1e-5}, "channels_last.json"),
            2);
  // NDHWC: conv3d, pool3d (max and avg).
  EXPECT_EQ(CheckPaddleGoldens("conv3d", {1e-9, 1e-5}, "channels_last.json"),
            1);
  EXPECT_EQ(CheckPaddleGoldens("pool3d", {1e-7, 1e-5}, "channels_last.json"),
            2);
}

TEST(ChannelsLastTest, GradientsMatchFiniteDifferences) {
  OpTester c("conv2d");
  c.Input("Input", RandomTensor({2, 4, 5, 3}, -1, 1, 1))
      .Input("Filter", RandomTensor({2, 3, 2, 3}, -1, 1, 2))
      .Output("Output")
      .Attr("paddings", std::vector<int>{1, 0})
      .Attr("data_format", std::string("NHWC"));
  EXPECT_THAT(c.CheckGrad({"Input", "Filter"}, {"Output"}), IsEmpty());
  EXPECT_EQ(c.Out("Output").dims(), (Dims{2, 5, 3, 2}));
  for (const char* type : {"max", "avg"}) {
    OpTester p("pool2d");
    p.Input("X", DistinctRandomTensor({2, 4, 4, 3}, -1, 1, 3))
        .Output("Out")
        .Attr("pooling_type", std::string(type))
        .Attr("ksize", std::vector<int>{2, 2})
        .Attr("strides", std::vector<int>{2, 2})
        .Attr("data_format", std::string("NHWC"));
    EXPECT_THAT(p.CheckGrad({"X"}, {"Out"}), IsEmpty()) << type;
    EXPECT_EQ(p.Out("Out").dims(), (Dims{2, 2, 2, 3}));
  }
  OpTester shuffle("pixel_shuffle");
  shuffle.Input("X", RandomTensor({1, 2, 3, 8}, -1, 1, 4))
      .Output("Out")
      .Attr("upscale_factor", 2)
      .Attr("data_format", std::string("NHWC"));
  EXPECT_THAT(shuffle.CheckGrad({"X"}, {"Out"}), IsEmpty());
  EXPECT_EQ(shuffle.Out("Out").dims(), (Dims{1, 4, 6, 2}));
  OpTester prelu("prelu");
  prelu.Input("X", DistinctRandomTensor({2, 3, 2, 4}, -1, 1, 5))
      .Input("Alpha", RandomTensor({1, 3, 2, 4}, 0, 1, 6))
      .Output("Out")
      .Attr("mode", std::string("element"))
      .Attr("data_format", std::string("NHWC"));
  EXPECT_THAT(prelu.CheckGrad({"X", "Alpha"}, {"Out"}), IsEmpty());
  OpTester pad("pad3d");
  pad.Input("X", RandomTensor({1, 3, 2, 4, 2}, -1, 1, 7))
      .Output("Out")
      .Attr("paddings", std::vector<int>{1, 2, 0, 1, 2, 0})
      .Attr("mode", std::string("replicate"))
      .Attr("data_format", std::string("NDHWC"));
  EXPECT_THAT(pad.CheckGrad({"X"}, {"Out"}), IsEmpty());
  EXPECT_EQ(pad.Out("Out").dims(), (Dims{1, 5, 3, 7, 2}));
}

// A layout attribute that is neither channels-first nor channels-last is
// named, for every op with the channels-last path.
TEST(ChannelsLastTest, UnknownLayoutsAreNamed) {
  OpTester shuffle("pixel_shuffle");
  shuffle.Input("X", RandomTensor({1, 8, 2, 2}, -1, 1, 1))
      .Output("Out")
      .Attr("upscale_factor", 2)
      .Attr("data_format", std::string("HWCN"));
  Status s = shuffle.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("'HWCN'"));
  OpTester pad("pad3d");
  pad.Input("X", RandomTensor({1, 1, 2, 2, 2}, -1, 1, 2))
      .Output("Out")
      .Attr("paddings", std::vector<int>(6, 1))
      .Attr("data_format", std::string("NHWC"));
  s = pad.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("neither NCDHW nor NDHWC"));
}

TEST(ChannelsLastTest, CompileTimeShapesStayChannelsLast) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 8, 8, 3});
  block.Var("x")->SetDType(DType::kFP32);
  block.Var("w")->SetDims({16, 3, 3, 3});
  block.Var("w")->SetDType(DType::kFP32);
  block.Var("y");
  OpDesc* op = block.AppendOp("conv2d");
  op->SetInput("Input", {"x"});
  op->SetInput("Filter", {"w"});
  op->SetOutput("Output", {"y"});
  op->SetAttr("strides", std::vector<int>{2, 2});
  op->SetAttr("paddings", std::vector<int>{1, 1});
  op->SetAttr("data_format", std::string("NHWC"));
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("y")->dims(), (Dims{-1, 4, 4, 16}));
  EXPECT_TRUE(ValidateProgram(program).ok());
  // A filter whose channels do not match X's last axis is named.
  block.Var("w")->SetDims({16, 5, 3, 3});
  const Status bad = InferShapeAtCompileTime(*op, block, false);
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(bad.message(), HasSubstr("'conv2d'"));
}

TEST(Conv2dSchemaTest, UnknownBatchAndEmptyOptionalSlots) {
  // The shape of Paddle-Lite's simple_model: 3->32, 3x3, stride 2, pad 1.
  Program program;
  Block& block = program.global_block();
  block.Var("image")->SetDims({-1, 3, 224, 224});
  block.Var("image")->SetDType(DType::kFP32);
  block.Var("w")->SetDims({32, 3, 3, 3});
  block.Var("w")->SetDType(DType::kFP32);
  block.Var("out");
  OpDesc* op = block.AppendOp("conv2d");
  op->SetInput("Input", {"image"});
  op->SetInput("Filter", {"w"});
  op->SetInput("Bias", {});
  op->SetInput("ResidualData", {});
  op->SetOutput("Output", {"out"});
  op->SetAttr("strides", std::vector<int>{2, 2});
  op->SetAttr("paddings", std::vector<int>{1, 1});
  op->SetAttr("data_format", std::string("AnyLayout"));
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("out")->dims(), (Dims{-1, 32, 112, 112}));
  EXPECT_TRUE(ValidateProgram(program).ok());
}

TEST(DepthwiseConv2dKernelTest, MatchesPaddle) {
  ExpectCpuKernels("depthwise_conv2d", {DType::kFP32, DType::kFP64});
  ExpectCpuKernels("depthwise_conv2d_grad", {DType::kFP32, DType::kFP64});
  EXPECT_EQ(CheckPaddleGoldens("depthwise_conv2d", {1e-12, 1e-5},
                               "depthwise_conv2d.json"),
            4);
}

TEST(DepthwiseConv2dKernelTest, MatchesDirectConvolutionAndGradients) {
  const ForwardCase cases[] = {
      {"multiplier1",
       {2, 3, 5, 5},
       {3, 1, 3, 3},
       {3, {1, 1}, {1, 1, 1, 1}, {1, 1}}},
      {"multiplier2_stride2_dilation2",
       {1, 2, 7, 6},
       {4, 1, 2, 3},
       {2, {2, 1}, {1, 0, 2, 1}, {2, 2}}},
  };
  for (const ForwardCase& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor input = RandomTensor(c.input, -1, 1, 11);
    Tensor filter = RandomTensor(c.filter, -1, 1, 12);
    OpTester t("depthwise_conv2d");
    t.Input("Input", input).Input("Filter", filter).Output("Output");
    SetConvAttrs(t, c.params);
    ASSERT_TRUE(t.Run().ok());
    EXPECT_EQ(CompareTensors(t.Out("Output"),
                             DirectConv(input, filter, c.params), 1e-12, 1e-12),
              "");
    EXPECT_THAT(t.CheckGrad({"Input", "Filter"}, {"Output"}), IsEmpty());
  }
}

TEST(DepthwiseConv2dKernelTest, BadAttributesAndShapesNameTheOp) {
  struct Bad {
    const char* what;
    Dims input, filter;
    int groups;
    std::vector<int> strides;
  };
  const Bad cases[] = {
      {"channels", {1, 3, 5, 5}, {3, 1, 3, 3}, 1, {1, 1}},
      {"groups", {1, 3, 5, 5}, {3, 1, 3, 3}, 0, {1, 1}},
      {"strides", {1, 3, 5, 5}, {3, 1, 3, 3}, 3, {0, 1}},
      {"window", {1, 2, 2, 2}, {2, 1, 3, 3}, 2, {1, 1}},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.what);
    OpTester t("depthwise_conv2d");
    t.Input("Input", RandomTensor(c.input, -1, 1, 1))
        .Input("Filter", RandomTensor(c.filter, -1, 1, 2))
        .Output("Output")
        .Attr("groups", c.groups)
        .Attr("strides", c.strides);
    const Status s = t.Run();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("'depthwise_conv2d'"));
  }
}

TEST(DepthwiseConv2dSchemaTest, UnknownBatchAtCompileTime) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 8, 32, 32});
  block.Var("x")->SetDType(DType::kFP32);
  block.Var("w")->SetDims({8, 1, 3, 3});
  block.Var("w")->SetDType(DType::kFP32);
  block.Var("y");
  OpDesc* op = block.AppendOp("depthwise_conv2d");
  op->SetInput("Input", {"x"});
  op->SetInput("Filter", {"w"});
  op->SetOutput("Output", {"y"});
  op->SetAttr("groups", 8);
  op->SetAttr("strides", std::vector<int>{2, 2});
  op->SetAttr("padding_algorithm", std::string("SAME"));
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("y")->dims(), (Dims{-1, 8, 16, 16}));
  EXPECT_EQ(block.FindVar("y")->dtype(), DType::kFP32);
  EXPECT_TRUE(ValidateProgram(program).ok());
}

}  // namespace
}  // namespace parex::testing
