// fp32 conv2d / conv2d_grad through oneDNN (kernels/cpu/spatial/dnnl_conv.h,
// issue 13): on shapes with padding (symmetric and not), strides, dilations,
// groups and 1x1 filters, the oneDNN results match the fp64 im2col path (the
// reference, itself checked against a direct convolution and finite
// differences in conv2d_kernel_test.cc) to fp32 accuracy; they are the same
// bits run to run and from a prepared op's cached primitives; and oneDNN is
// what ran (its execution count grows), while switching it off runs im2col.
#include "kernels/cpu/spatial/dnnl_conv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "graph/ir/validate.h"
#include "kernels/device_context.h"
#include "kernels/op_runner.h"
#include "kernels/prepared_op.h"
#include "kernels/scope.h"
#include "tests/kernels/op_tester.h"

namespace parex::testing {
namespace {

struct Case {
  std::string name;
  Dims input, filter;
  std::vector<int> strides{1, 1};
  std::vector<int> paddings{0, 0, 0, 0};  // top, bottom, left, right
  std::vector<int> dilations{1, 1};
  int groups = 1;
};

std::vector<Case> Cases() {
  return {
      {"lenet_conv1_pad2", {8, 1, 28, 28}, {6, 1, 5, 5}, {1, 1}, {2, 2, 2, 2}},
      {"lenet_conv2", {8, 6, 14, 14}, {16, 6, 5, 5}},
      {"stride2_asymmetric_pad",
       {3, 4, 11, 9},
       {5, 4, 3, 3},
       {2, 2},
       {0, 1, 1, 0}},
      {"groups2_dilation2",
       {2, 6, 12, 12},
       {4, 3, 3, 3},
       {1, 1},
       {1, 1, 1, 1},
       {2, 2},
       2},
      {"one_by_one", {4, 8, 7, 7}, {12, 8, 1, 1}},
      {"depthwise_stride2",
       {2, 4, 9, 9},
       {4, 1, 3, 3},
       {2, 2},
       {1, 1, 1, 1},
       {1, 1},
       4},
      {"blocks_16_to_32_pad1",
       {2, 16, 10, 10},
       {32, 16, 3, 3},
       {1, 1},
       {1, 1, 1, 1}},
  };
}

// A program with conv2d and conv2d_grad of one case in `dtype`, its tensors
// in a scope, and the two ops prepared.
struct ConvProgram {
  Program program;
  Scope scope;
  CpuDeviceContext device;
  std::unique_ptr<PreparedOp> forward, grad;
};

Tensor Cast(const Tensor& t, DType dtype) {
  Tensor out(dtype, t.dims());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v =
        t.dtype() == DType::kFP64 ? t.data<double>()[i] : t.data<float>()[i];
    if (dtype == DType::kFP64) {
      out.data<double>()[i] = v;
    } else {
      out.data<float>()[i] = static_cast<float>(v);
    }
  }
  return out;
}

std::unique_ptr<ConvProgram> Build(const Case& c, DType dtype) {
  auto p = std::make_unique<ConvProgram>();
  Block& block = p->program.global_block();
  // fp32 values, so both dtypes start from the same numbers.
  const Tensor input =
      Cast(RandomTensor(c.input, -1, 1, 11, DType::kFP64), DType::kFP32);
  const Tensor filter =
      Cast(RandomTensor(c.filter, -1, 1, 12, DType::kFP64), DType::kFP32);
  auto var = [&](const std::string& name, const Tensor* value) {
    VarDesc* v = block.Var(name);
    v->SetDType(dtype);
    if (value != nullptr) {
      v->SetDims(value->dims());
      *p->scope.Var(name)->GetMutableTensor() = Cast(*value, dtype);
    }
  };
  var("in", &input);
  var("w", &filter);
  var("out", nullptr);
  OpDesc* conv = block.AppendOp("conv2d");
  conv->SetInput("Input", {"in"});
  conv->SetInput("Filter", {"w"});
  conv->SetOutput("Output", {"out"});
  conv->SetAttr("strides", c.strides);
  conv->SetAttr("paddings", c.paddings);
  conv->SetAttr("dilations", c.dilations);
  conv->SetAttr("groups", c.groups);
  p->scope.Var("out");
  EXPECT_TRUE(ValidateOp(*conv, block).ok()) << c.name;
  auto forward = PreparedOp::Prepare(*conv, &p->scope, &p->device);
  EXPECT_TRUE(forward.ok()) << c.name << ": " << forward.status().ToString();
  p->forward = std::move(*forward);
  EXPECT_TRUE(p->forward->Run().ok()) << c.name;
  // Output@GRAD: fixed random values of the output's shape.
  const Tensor& out = p->scope.FindVar("out")->GetTensor() != nullptr
                          ? *p->scope.FindVar("out")->GetTensor()
                          : Tensor();
  const Tensor dout =
      Cast(RandomTensor(out.dims(), -1, 1, 13, DType::kFP64), DType::kFP32);
  var("dout", &dout);
  var("din", nullptr);
  var("dw", nullptr);
  p->scope.Var("din");
  p->scope.Var("dw");
  OpDesc* grad = block.AppendOp("conv2d_grad");
  grad->SetInput("Input", {"in"});
  grad->SetInput("Filter", {"w"});
  grad->SetInput("Output@GRAD", {"dout"});
  grad->SetOutput("Input@GRAD", {"din"});
  grad->SetOutput("Filter@GRAD", {"dw"});
  grad->SetAttr("strides", c.strides);
  grad->SetAttr("paddings", c.paddings);
  grad->SetAttr("dilations", c.dilations);
  grad->SetAttr("groups", c.groups);
  EXPECT_TRUE(ValidateOp(*grad, block).ok()) << c.name;
  auto prepared = PreparedOp::Prepare(*grad, &p->scope, &p->device);
  EXPECT_TRUE(prepared.ok()) << c.name << ": " << prepared.status().ToString();
  p->grad = std::move(*prepared);
  EXPECT_TRUE(p->grad->Run().ok()) << c.name;
  return p;
}

const Tensor& Get(const ConvProgram& p, const std::string& name) {
  return *p.scope.FindVar(name)->GetTensor();
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.dims() == b.dims() && a.dtype() == b.dtype() &&
         std::memcmp(a.data<float>(), b.data<float>(),
                     a.numel() * sizeof(float)) == 0;
}

// How many products of values in [-1, 1] each element of `name` sums: the
// filter's taps per group for the output, the output channels per group
// times the taps for the input gradient, the batch times the output plane
// for the filter gradient.
int64_t Terms(const Case& c, const std::string& name) {
  const int64_t taps = c.filter[2] * c.filter[3];
  if (name == "out") return c.filter[1] * taps;
  if (name == "din") return c.filter[0] / c.groups * taps;
  return c.input[0] * c.input[2] * c.input[3];  // dw: at most the input plane
}

// fp32 accuracy against the fp64 reference: a sum of `terms` products of
// values in [-1, 1] in fp32 is within terms * 2^-23 of the exact sum, in any
// order of summation.
void ExpectClose(const Tensor& actual, const Tensor& reference,
                 const std::string& what, int64_t terms) {
  ASSERT_EQ(actual.dims(), reference.dims()) << what;
  double worst = 0;
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const double err =
        std::abs(double{actual.data<float>()[i]} - reference.data<double>()[i]);
    worst = std::max(worst, err);
  }
  EXPECT_LT(worst, static_cast<double>(terms) * std::ldexp(1.0, -23) + 1e-6)
      << what;
}

class DnnlConvTest : public ::testing::Test {
 protected:
  void TearDown() override {
    cpu::SetDnnlConvMode(cpu::DnnlConvMode::kWhereFaster);
  }
};

TEST_F(DnnlConvTest, MatchesTheFp64ReferenceAndIsTheSameBitsEveryRun) {
  ASSERT_TRUE(cpu::DnnlAvailable())
      << "parex was built without oneDNN (scripts/bootstrap installs "
         "libdnnl-dev)";
  for (const Case& c : Cases()) {
    cpu::SetDnnlConvMode(cpu::DnnlConvMode::kAlways);
    const int64_t before = cpu::DnnlConvExecutions();
    auto dnnl = Build(c, DType::kFP32);
    // Forward, backward data, backward weights: three primitives ran.
    EXPECT_EQ(cpu::DnnlConvExecutions() - before, 3) << c.name;
    auto reference = Build(c, DType::kFP64);
    for (const char* name : {"out", "din", "dw"}) {
      ExpectClose(Get(*dnnl, name), Get(*reference, name), c.name + " " + name,
                  Terms(c, name));
    }
    // Again through the prepared ops' cached primitives, and from scratch.
    const Tensor out = Get(*dnnl, "out"), din = Get(*dnnl, "din"),
                 dw = Get(*dnnl, "dw");
    ASSERT_TRUE(dnnl->forward->Run().ok());
    ASSERT_TRUE(dnnl->grad->Run().ok());
    EXPECT_TRUE(SameBits(Get(*dnnl, "out"), out)) << c.name;
    EXPECT_TRUE(SameBits(Get(*dnnl, "din"), din)) << c.name;
    EXPECT_TRUE(SameBits(Get(*dnnl, "dw"), dw)) << c.name;
    auto again = Build(c, DType::kFP32);
    EXPECT_TRUE(SameBits(Get(*again, "out"), out)) << c.name;
    EXPECT_TRUE(SameBits(Get(*again, "din"), din)) << c.name;
    EXPECT_TRUE(SameBits(Get(*again, "dw"), dw)) << c.name;
    // Switched off, fp32 runs im2col (no oneDNN execution), also accurate.
    cpu::SetDnnlConvMode(cpu::DnnlConvMode::kNever);
    const int64_t off_before = cpu::DnnlConvExecutions();
    auto im2col = Build(c, DType::kFP32);
    EXPECT_EQ(cpu::DnnlConvExecutions(), off_before) << c.name;
    for (const char* name : {"out", "din", "dw"}) {
      ExpectClose(Get(*im2col, name), Get(*reference, name),
                  c.name + " im2col " + name, Terms(c, name));
    }
  }
}

TEST_F(DnnlConvTest, ANewShapeRebuildsThePrimitives) {
  // A prepared op fed a larger batch: the cached primitives are for the old
  // shape, so they are rebuilt, and the result matches a fresh op.
  ASSERT_TRUE(cpu::DnnlAvailable());
  cpu::SetDnnlConvMode(cpu::DnnlConvMode::kAlways);
  Case c = Cases()[0];
  auto p = Build(c, DType::kFP32);
  Case bigger = c;
  bigger.input[0] = 13;
  auto fresh = Build(bigger, DType::kFP32);
  *p->scope.Var("in")->GetMutableTensor() = Get(*fresh, "in");
  *p->scope.Var("dout")->GetMutableTensor() = Get(*fresh, "dout");
  ASSERT_TRUE(p->forward->Run().ok());
  ASSERT_TRUE(p->grad->Run().ok());
  EXPECT_TRUE(SameBits(Get(*p, "out"), Get(*fresh, "out")));
  EXPECT_TRUE(SameBits(Get(*p, "din"), Get(*fresh, "din")));
  EXPECT_TRUE(SameBits(Get(*p, "dw"), Get(*fresh, "dw")));
}

TEST_F(DnnlConvTest, ByDefaultWholeChannelBlocksAndDepthwiseGoToOneDnn) {
  // kWhereFaster (the default): oneDNN where both channel counts per group
  // are multiples of 16, except 1x1s of stride 1 on planes larger than 16
  // pixels (one GEMM per image there); for a stem (at most 4 input
  // channels, output channels a multiple of 16, a filter larger than 1x1);
  // and for depthwise convolutions (one input and one output channel per
  // group); im2col elsewhere.
  ASSERT_TRUE(cpu::DnnlAvailable());
  ASSERT_EQ(cpu::GetDnnlConvMode(), cpu::DnnlConvMode::kWhereFaster);
  for (const Case& c : Cases()) {
    const bool blocks =
        c.name == "blocks_16_to_32_pad1" || c.name == "depthwise_stride2";
    const int64_t before = cpu::DnnlConvExecutions();
    auto p = Build(c, DType::kFP32);
    EXPECT_EQ(cpu::DnnlConvExecutions() - before, blocks ? 3 : 0) << c.name;
  }
  cpu::DnnlConvParams p;
  p.n = 1, p.c = 32, p.h = 8, p.w = 8, p.m = 64, p.kh = 3, p.kw = 3;
  p.oh = 6, p.ow = 6;
  EXPECT_TRUE(cpu::DnnlConvChosen(p));
  p.kw = 1;  // 3x1: still more than one tap
  EXPECT_TRUE(cpu::DnnlConvChosen(p));
  p.kh = 1;  // 1x1 on a 6x6 plane: one GEMM per image
  EXPECT_FALSE(cpu::DnnlConvChosen(p));
  p.oh = p.ow = 4;  // on 4x4: oneDNN
  EXPECT_TRUE(cpu::DnnlConvChosen(p));
  p.oh = p.ow = 6;
  p.stride_h = p.stride_w = 2;  // a strided 1x1: im2col would gather
  EXPECT_TRUE(cpu::DnnlConvChosen(p));
  p.stride_h = p.stride_w = 1;
  p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;  // padded 1x1
  EXPECT_TRUE(cpu::DnnlConvChosen(p));
  p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 0;
  p.c = 3;  // a stem on an image: 3x3, 7x7 to oneDNN, not a 1x1
  p.kh = p.kw = 7;
  EXPECT_TRUE(cpu::DnnlConvChosen(p));
  p.kh = p.kw = 1;
  EXPECT_FALSE(cpu::DnnlConvChosen(p));
  p.kh = p.kw = 5;
  p.c = 1;
  p.m = 20;  // LeNet's first: no whole block of outputs
  EXPECT_FALSE(cpu::DnnlConvChosen(p));
  p.c = 6;  // neither few nor whole blocks of inputs
  p.m = 16;
  EXPECT_FALSE(cpu::DnnlConvChosen(p));
  p.c = 32;
  p.kh = p.kw = 3;
  p.m = 50;
  EXPECT_FALSE(cpu::DnnlConvChosen(p));
  p.m = 64;
  p.groups = 2;  // 16 and 32 per group
  EXPECT_TRUE(cpu::DnnlConvChosen(p));
  p.groups = 32;  // 1 input and 2 output channels per group
  EXPECT_FALSE(cpu::DnnlConvChosen(p));
  p.m = 32;  // depthwise: 1 and 1
  EXPECT_TRUE(cpu::DnnlConvChosen(p));
  p.kh = p.kw = 1;  // depthwise 1x1 too
  EXPECT_TRUE(cpu::DnnlConvChosen(p));
  p.kh = p.kw = 3;
  p.groups = 16;  // 2 input channels per group
  EXPECT_FALSE(cpu::DnnlConvChosen(p));
  p.m = 64;
  p.groups = 1;
  cpu::SetDnnlConvMode(cpu::DnnlConvMode::kNever);
  EXPECT_FALSE(cpu::DnnlConvChosen(p));
  cpu::SetDnnlConvMode(cpu::DnnlConvMode::kAlways);
  p.m = 50;
  EXPECT_TRUE(cpu::DnnlConvChosen(p));
}

// Channels-last conv2d with the fused form's Bias, ResidualData and
// activation, run by oneDNN on the NHWC tensors (NativeChannelsLastConv:
// NHWC kernels, 16-channel blocks for a wide filter on a tiny plane, a
// matmul for a 1x1 of stride 1; the residual summed into the output),
// against the same op on its NCHW view through im2col (oneDNN off).
TEST_F(DnnlConvTest, ChannelsLastFusedConvsMatchTheirNchwViews) {
  struct NhwcCase {
    const char* name;
    Dims input, filter;  // input NHWC, filter OIHW
    int groups;
    const char* act;
    bool residual;
    int stride = 1;  // 1x1s of stride 2: a product of gathered pixels
  };
  const NhwcCase cases[] = {
      {"tiny_plane_blocked", {8, 2, 2, 32}, {32, 32, 3, 3}, 1, "relu", false},
      {"nhwc_3x3", {2, 6, 6, 16}, {32, 16, 3, 3}, 1, "relu6", false},
      {"depthwise", {2, 6, 6, 16}, {16, 1, 3, 3}, 16, "relu6", false},
      {"one_by_one", {2, 5, 5, 16}, {24, 16, 1, 1}, 1, "", false},
      {"one_by_one_relu6", {1, 3, 3, 16}, {40, 16, 1, 1}, 1, "relu6", false},
      {"residual_3x3_relu", {2, 6, 6, 16}, {16, 16, 3, 3}, 1, "relu", true},
      {"residual_tiny_plane", {8, 2, 2, 32}, {32, 32, 3, 3}, 1, "relu", true},
      {"residual_1x1", {2, 5, 5, 16}, {24, 16, 1, 1}, 1, "", true},
      {"one_by_one_stride2",
       {2, 7, 7, 16},
       {32, 16, 1, 1},
       1,
       "relu",
       false,
       2},
      {"residual_1x1_stride2",
       {3, 6, 5, 16},
       {24, 16, 1, 1},
       1,
       "relu",
       true,
       2},
      {"nhwc_3x3_stride2", {2, 7, 6, 16}, {32, 16, 3, 3}, 1, "", false, 2}};
  for (const NhwcCase& c : cases) {
    const bool one = c.filter[2] == 1;
    const Dims out = {c.input[0], (c.input[1] - 1) / c.stride + 1,
                      (c.input[2] - 1) / c.stride + 1, c.filter[0]};
    auto run = [&](cpu::DnnlConvMode mode, int64_t* executions) {
      cpu::SetDnnlConvMode(mode);
      const int64_t before = cpu::DnnlConvExecutions();
      OpTester t("conv2d");
      t.Input("Input", RandomTensor(c.input, -1, 1, 21, DType::kFP32))
          .Input("Filter", RandomTensor(c.filter, -1, 1, 22, DType::kFP32))
          .Input("Bias", RandomTensor({c.filter[0]}, -1, 1, 23, DType::kFP32));
      if (c.residual) {
        t.Input("ResidualData", RandomTensor(out, -2, 2, 24, DType::kFP32));
      }
      t.Output("Output")
          .Attr("strides", std::vector<int>{c.stride, c.stride})
          .Attr("paddings",
                one ? std::vector<int>{0, 0} : std::vector<int>{1, 1})
          .Attr("dilations", std::vector<int>{1, 1})
          .Attr("groups", c.groups)
          .Attr("data_format", std::string("NHWC"))
          .Attr("fuse_activation", std::string(c.act))
          .Attr("fuse_alpha", 0.5f);
      EXPECT_TRUE(t.Run().ok()) << c.name;
      *executions = cpu::DnnlConvExecutions() - before;
      return t.Out("Output");
    };
    int64_t native_runs = 0, view_runs = 0;
    const Tensor native = run(cpu::DnnlConvMode::kWhereFaster, &native_runs);
    const Tensor view = run(cpu::DnnlConvMode::kNever, &view_runs);
    cpu::SetDnnlConvMode(cpu::DnnlConvMode::kWhereFaster);
    EXPECT_EQ(native_runs, 1) << c.name;  // oneDNN ran it
    EXPECT_EQ(view_runs, 0) << c.name;    // im2col did
    ASSERT_EQ(native.dims(), view.dims()) << c.name;
    for (int64_t i = 0; i < view.numel(); ++i) {
      ASSERT_NEAR(native.data<float>()[i], view.data<float>()[i], 1e-4f)
          << c.name << " element " << i;
    }
  }
}

// conv2d_grad with data_format NHWC (the channels-last training pass's) runs
// on the NHWC tensors (NativeChannelsLastConvGrad, no transposes): oneDNN's
// backward primitives, except the filter's gradient of an ungrouped conv
// whose output plane has at most 16 pixels, one GEMM over the batch's
// patches (FilterGradByGemm: one oneDNN execution then, the data's). Either
// way it matches its NCHW view run by im2col, on the shapes the forward test
// covers, a stem on 3 channels, dilated and unevenly padded tiny planes.
TEST_F(DnnlConvTest, ChannelsLastGradientsMatchTheirNchwViews) {
  struct GradCase {
    const char* name;
    Dims input, filter;  // input NHWC, filter OIHW
    int groups, stride;
    std::vector<int> pads;  // top, bottom, left, right
    int dilation = 1;
  };
  const GradCase cases[] = {
      {"nhwc_3x3", {2, 6, 6, 16}, {32, 16, 3, 3}, 1, 1, {1, 1, 1, 1}},
      {"tiny_plane", {8, 2, 2, 32}, {32, 32, 3, 3}, 1, 1, {1, 1, 1, 1}},
      {"stride2", {2, 7, 6, 16}, {32, 16, 3, 3}, 1, 2, {1, 1, 1, 1}},
      {"one_by_one", {2, 5, 5, 16}, {24, 16, 1, 1}, 1, 1, {0, 0, 0, 0}},
      {"one_by_one_stride2", {2, 7, 7, 16}, {32, 16, 1, 1}, 1, 2, {0, 0, 0, 0}},
      {"depthwise", {2, 6, 6, 16}, {16, 1, 3, 3}, 16, 1, {1, 1, 1, 1}},
      {"stem_7x7", {2, 12, 12, 3}, {16, 3, 7, 7}, 1, 2, {3, 3, 3, 3}},
      {"dilated_tiny", {3, 4, 4, 16}, {16, 16, 3, 3}, 1, 1, {2, 2, 2, 2}, 2},
      {"uneven_pads_tiny", {3, 3, 4, 16}, {32, 16, 3, 3}, 1, 1, {0, 1, 1, 0}},
  };
  for (const GradCase& c : cases) {
    const int64_t kh = c.filter[2], kw = c.filter[3];
    const int64_t span_h = c.dilation * (kh - 1) + 1;
    const int64_t span_w = c.dilation * (kw - 1) + 1;
    const Dims out = {
        c.input[0],
        (c.input[1] + c.pads[0] + c.pads[1] - span_h) / c.stride + 1,
        (c.input[2] + c.pads[2] + c.pads[3] - span_w) / c.stride + 1,
        c.filter[0]};
    auto run = [&](cpu::DnnlConvMode mode, int64_t* executions) {
      cpu::SetDnnlConvMode(mode);
      const int64_t before = cpu::DnnlConvExecutions();
      OpTester t(c.groups > 1 ? "depthwise_conv2d_grad" : "conv2d_grad");
      t.Input("Input", RandomTensor(c.input, -1, 1, 31, DType::kFP32))
          .Input("Filter", RandomTensor(c.filter, -1, 1, 32, DType::kFP32))
          .Input("Output@GRAD", RandomTensor(out, -1, 1, 33, DType::kFP32))
          .Output("Input@GRAD")
          .Output("Filter@GRAD")
          .Attr("strides", std::vector<int>{c.stride, c.stride})
          .Attr("paddings", c.pads)
          .Attr("dilations", std::vector<int>{c.dilation, c.dilation})
          .Attr("groups", c.groups)
          .Attr("data_format", std::string("NHWC"));
      EXPECT_TRUE(t.Run().ok()) << c.name;
      *executions = cpu::DnnlConvExecutions() - before;
      return std::make_pair(t.Out("Input@GRAD"), t.Out("Filter@GRAD"));
    };
    int64_t native_runs = 0, view_runs = 0;
    const auto native = run(cpu::DnnlConvMode::kWhereFaster, &native_runs);
    const auto view = run(cpu::DnnlConvMode::kNever, &view_runs);
    cpu::SetDnnlConvMode(cpu::DnnlConvMode::kWhereFaster);
    const bool gemm = c.groups == 1 && out[1] * out[2] <= 16;
    EXPECT_EQ(native_runs, gemm ? 1 : 2) << c.name;
    EXPECT_EQ(view_runs, 0) << c.name;  // im2col
    for (const auto& [a, b] : {std::make_pair(native.first, view.first),
                               std::make_pair(native.second, view.second)}) {
      ASSERT_EQ(a.dims(), b.dims()) << c.name;
      for (int64_t i = 0; i < a.numel(); ++i) {
        ASSERT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-4f)
            << c.name << " element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace parex::testing
