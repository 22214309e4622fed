// Tests of pool2d and pool2d_grad (kernels/cpu/spatial/pool2d_kernel.cc, schema
// in graph/ir/ops/conv_ops.cc): hand-computed windows for every mode, a naive
// max pool written here, gradients against finite differences, shape errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "graph/ir/op_schema.h"
#include "tests/kernels/op_tester.h"
#include "tests/kernels/paddle_golden.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// 1, 2, ..., n as a [1, 1, h, w] tensor.
Tensor Iota(int h, int w) {
  std::vector<double> v(h * w);
  for (int i = 0; i < h * w; ++i) v[i] = i + 1;
  return MakeTensor<double>({1, 1, h, w}, v);
}

// Makes `t` (a pool2d tester) pool x with the given type and window.
OpTester& Pool(OpTester& t, const std::string& type, Tensor x,
               std::vector<int> ksize) {
  return t.Input("X", std::move(x))
      .Output("Out")
      .Attr("pooling_type", type)
      .Attr("ksize", std::move(ksize));
}

void ExpectOut(OpTester& t, const Dims& dims, const std::vector<double>& want) {
  Status s = t.Run();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(CompareTensors(t.Out("Out"), MakeTensor<double>(dims, want), 1e-12,
                           1e-12),
            "");
}

TEST(Pool2dKernelTest, MaxAndAvgTwoByTwo) {
  OpTester max("pool2d");
  Pool(max, "max", Iota(4, 4), {2, 2});
  max.Attr("strides", std::vector<int>{2, 2});
  ExpectOut(max, {1, 1, 2, 2}, {6, 8, 14, 16});
  OpTester avg("pool2d");
  Pool(avg, "avg", Iota(4, 4), {2, 2});
  avg.Attr("strides", std::vector<int>{2, 2});
  ExpectOut(avg, {1, 1, 2, 2}, {3.5, 5.5, 11.5, 13.5});
}

TEST(Pool2dKernelTest, AvgExclusiveAndInclusivePadding) {
  // 3x3 window, stride 1, padding 1 over 1..9: the corner window holds
  // 1,2,4,5 (sum 12) inside the image, the centre all nine (sum 45);
  // inclusive averages divide every window by 9.
  OpTester ex("pool2d");
  Pool(ex, "avg", Iota(3, 3), {3, 3});
  ex.Attr("paddings", std::vector<int>{1, 1});
  ExpectOut(ex, {1, 1, 3, 3},
            {12 / 4., 21 / 6., 16 / 4., 27 / 6., 45 / 9., 33 / 6., 24 / 4.,
             39 / 6., 28 / 4.});
  OpTester in("pool2d");
  Pool(in, "avg", Iota(3, 3), {3, 3});
  in.Attr("paddings", std::vector<int>{1, 1}).Attr("exclusive", false);
  ExpectOut(in, {1, 1, 3, 3},
            {12 / 9., 21 / 9., 16 / 9., 27 / 9., 45 / 9., 33 / 9., 24 / 9.,
             39 / 9., 28 / 9.});
}

TEST(Pool2dKernelTest, CeilModeAddsPartialWindows) {
  // 5x5 of 1..25, 2x2 stride 2: floor gives 2x2, ceil 3x3 with clipped
  // windows at the right and bottom.
  OpTester floor("pool2d");
  Pool(floor, "max", Iota(5, 5), {2, 2});
  floor.Attr("strides", std::vector<int>{2, 2});
  ExpectOut(floor, {1, 1, 2, 2}, {7, 9, 17, 19});
  OpTester ceil("pool2d");
  Pool(ceil, "max", Iota(5, 5), {2, 2});
  ceil.Attr("strides", std::vector<int>{2, 2}).Attr("ceil_mode", true);
  ExpectOut(ceil, {1, 1, 3, 3}, {7, 9, 10, 17, 19, 20, 22, 24, 25});
  OpTester avg("pool2d");
  Pool(avg, "avg", Iota(5, 5), {2, 2});
  avg.Attr("strides", std::vector<int>{2, 2}).Attr("ceil_mode", true);
  ExpectOut(avg, {1, 1, 3, 3}, {4, 6, 7.5, 14, 16, 17.5, 21.5, 23.5, 25});
}

TEST(Pool2dKernelTest, GlobalPooling) {
  Tensor x = MakeTensor<double>({1, 2, 2, 2}, {1, 5, 3, 7, -1, -2, -8, -4});
  OpTester max("pool2d");
  Pool(max, "max", x, {1, 1});
  max.Attr("global_pooling", true);
  ExpectOut(max, {1, 2, 1, 1}, {7, -1});
  OpTester avg("pool2d");
  Pool(avg, "avg", x, {1, 1});
  avg.Attr("global_pooling", true).Attr("paddings", std::vector<int>{1, 1});
  ExpectOut(avg, {1, 2, 1, 1}, {4, -3.75});
}

TEST(Pool2dKernelTest, AdaptiveWindows) {
  // 5 -> 2: windows [0,3) and [2,5) on both axes.
  OpTester t("pool2d");
  Pool(t, "avg", Iota(5, 5), {2, 2});
  t.Attr("adaptive", true);
  ExpectOut(t, {1, 1, 2, 2}, {7, 9, 17, 19});
}

TEST(Pool2dKernelTest, SamePadding) {
  // 5x5, 3x3 stride 2, SAME: out 3x3, padding 1 on each side.
  OpTester t("pool2d");
  Pool(t, "max", Iota(5, 5), {3, 3});
  t.Attr("strides", std::vector<int>{2, 2})
      .Attr("padding_algorithm", std::string("SAME"));
  ExpectOut(t, {1, 1, 3, 3}, {7, 9, 10, 17, 19, 20, 22, 24, 25});
}

TEST(Pool2dKernelTest, MaxMatchesNaiveLoopFp32) {
  // Max over the in-image part of each window, 4-entry paddings, stride 2.
  Tensor x = RandomTensor({2, 3, 6, 5}, -1, 1, 1);
  const int oh = (6 + 1 + 0 - 3) / 2 + 1, ow = (5 + 2 + 1 - 3) / 2 + 1;
  std::vector<double> want;
  const double* in = x.data<double>();
  for (int p = 0; p < 6; ++p) {
    for (int oy = 0; oy < oh; ++oy) {
      for (int ox = 0; ox < ow; ++ox) {
        double m = -std::numeric_limits<double>::infinity();
        for (int i = 0; i < 3; ++i) {
          for (int j = 0; j < 3; ++j) {
            const int y = oy * 2 - 1 + i, xx = ox * 2 - 2 + j;
            if (y >= 0 && y < 6 && xx >= 0 && xx < 5) {
              m = std::max(m, in[(p * 6 + y) * 5 + xx]);
            }
          }
        }
        want.push_back(m);
      }
    }
  }
  OpTester t("pool2d");
  t.Input("X", RandomTensor({2, 3, 6, 5}, -1, 1, 1, DType::kFP32))
      .Output("Out")
      .Attr("pooling_type", std::string("max"))
      .Attr("ksize", std::vector<int>{3, 3})
      .Attr("strides", std::vector<int>{2, 2})
      .Attr("paddings", std::vector<int>{1, 0, 2, 1});
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(CompareTensors(t.Out("Out"),
                           MakeTensor<double>({2, 3, oh, ow}, want), 1e-6, 0),
            "");
}

TEST(Pool2dKernelTest, TiledMaxWindowsMatchANaiveLoopWithTies) {
  // k x k windows with stride k and no padding take a loop of their own; on
  // an image they do not tile exactly (7x9) and full of ties (values 0..2),
  // its max and its gradient (to the first maximum of each window in row
  // order, zero outside every window) match a naive loop written here.
  for (int k : {2, 3}) {
    SCOPED_TRACE(k);
    const int h = 7, w = 9, oh = h / k, ow = w / k, planes = 6;
    std::vector<double> xv(planes * h * w), dov(planes * oh * ow);
    for (size_t i = 0; i < xv.size(); ++i) xv[i] = (i * 7 + i / 5) % 3;
    for (size_t i = 0; i < dov.size(); ++i) dov[i] = 0.5 + i;
    std::vector<double> out(dov.size()), dx(xv.size(), 0.0);
    for (int p = 0; p < planes; ++p) {
      for (int oy = 0; oy < oh; ++oy) {
        for (int ox = 0; ox < ow; ++ox) {
          int arg = -1;
          for (int y = oy * k; y < oy * k + k; ++y) {
            for (int x = ox * k; x < ox * k + k; ++x) {
              const int i = (p * h + y) * w + x;
              if (arg < 0 || xv[i] > xv[arg]) arg = i;
            }
          }
          const int o = (p * oh + oy) * ow + ox;
          out[o] = xv[arg];
          dx[arg] = dov[o];
        }
      }
    }
    const Tensor x = MakeTensor<double>({2, 3, h, w}, xv);
    OpTester fwd("pool2d");
    Pool(fwd, "max", x, {k, k}).Attr("strides", std::vector<int>{k, k});
    ExpectOut(fwd, {2, 3, oh, ow}, out);
    OpTester grad("pool2d_grad");
    grad.Input("X", x)
        .Input("Out", MakeTensor<double>({2, 3, oh, ow}, out))
        .Input("Out@GRAD", MakeTensor<double>({2, 3, oh, ow}, dov))
        .Output("X@GRAD")
        .Attr("pooling_type", std::string("max"))
        .Attr("ksize", std::vector<int>{k, k})
        .Attr("strides", std::vector<int>{k, k});
    ASSERT_TRUE(grad.Run().ok());
    EXPECT_EQ(CompareTensors(grad.Out("X@GRAD"),
                             MakeTensor<double>({2, 3, h, w}, dx), 0, 0),
              "");
  }
}

struct GradCase {
  const char* name;
  std::string type;
  std::vector<int> ksize, strides, paddings;
  bool exclusive = true, global = false, ceil = false, adaptive = false;
};

TEST(Pool2dKernelTest, Gradients) {
  const GradCase cases[] = {
      {"max_overlapping_padded", "max", {3, 3}, {1, 1}, {1, 1}},
      {"max_stride2", "max", {2, 2}, {2, 2}, {0, 0}},
      {"max_global", "max", {1, 1}, {1, 1}, {0, 0}, true, true},
      {"avg_padded_exclusive", "avg", {3, 3}, {2, 2}, {1, 1}},
      {"avg_padded_inclusive", "avg", {3, 3}, {2, 2}, {1, 1}, false},
      {"avg_global", "avg", {1, 1}, {1, 1}, {0, 0}, true, true},
      {"avg_ceil_mode", "avg", {2, 2}, {2, 2}, {0, 0}, true, false, true},
      {"avg_adaptive", "avg", {2, 3}, {1, 1}, {0, 0}, true, false, false, true},
  };
  for (const GradCase& c : cases) {
    SCOPED_TRACE(c.name);
    OpTester t("pool2d");
    t.Input("X", DistinctRandomTensor({1, 2, 5, 5}, -1, 1, 3))
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

// [N, C, H, W] <-> [N, H, W, C] of a 4-D tensor of T.
template <typename T>
Tensor MoveChannels(const Tensor& x, bool to_last) {
  const Dims& d = x.dims();
  const int64_t n = d[0], c = to_last ? d[1] : d[3];
  const int64_t h = to_last ? d[2] : d[1], w = to_last ? d[3] : d[2];
  std::vector<T> out(x.numel());
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t k = 0; k < c; ++k) {
      for (int64_t p = 0; p < h * w; ++p) {
        const int64_t first = (b * c + k) * h * w + p;
        const int64_t last = (b * h * w + p) * c + k;
        out[to_last ? last : first] = x.data<T>()[to_last ? first : last];
      }
    }
  }
  return MakeTensor<T>(to_last ? Dims{n, h, w, c} : Dims{n, c, h, w}, out);
}

// Whether `a` and `b` hold the same values, NaN where the other has NaN.
template <typename T>
void ExpectSameValues(const Tensor& a, const Tensor& b,
                      const std::string& what) {
  ASSERT_EQ(a.dims(), b.dims()) << what;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const T u = a.data<T>()[i], v = b.data<T>()[i];
    if (std::isnan(u)) {
      EXPECT_TRUE(std::isnan(v)) << what << " element " << i;
    } else {
      ASSERT_EQ(u, v) << what << " element " << i;
    }
  }
}

// pool2d and pool2d_grad with data_format NHWC run on the NHWC tensors
// themselves (NativeChannelsLastPool): every mode gives the NCHW kernels'
// values bit for bit, NaNs, ties (the gradient to the first maximum of a
// window) and windows wholly in the padding included.
struct NhwcPoolCase {
  const char* name;
  const char* type;
  std::vector<int> ksize, strides, paddings;
  bool exclusive, ceil_mode, adaptive, global;
};

std::vector<NhwcPoolCase> NhwcPoolCases() {
  return {
      {"max 3x3 s2 p1",
       "max",
       {3, 3},
       {2, 2},
       {1, 1},
       true,
       false,
       false,
       false},
      {"avg 3x3 s1 p1 exclusive",
       "avg",
       {3, 3},
       {1, 1},
       {1, 1},
       true,
       false,
       false,
       false},
      {"avg inclusive",
       "avg",
       {3, 3},
       {2, 2},
       {1, 1},
       false,
       false,
       false,
       false},
      {"max ceil_mode",
       "max",
       {2, 2},
       {3, 3},
       {1, 1},
       true,
       true,
       false,
       false},
      {"avg ceil_mode",
       "avg",
       {2, 2},
       {3, 3},
       {1, 1},
       true,
       true,
       false,
       false},
      {"avg adaptive 3x2",
       "avg",
       {3, 2},
       {1, 1},
       {0, 0},
       true,
       false,
       true,
       false},
      {"max adaptive 1x1",
       "max",
       {1, 1},
       {1, 1},
       {0, 0},
       true,
       false,
       true,
       false},
      {"avg global", "avg", {1, 1}, {1, 1}, {0, 0}, true, false, false, true},
  };
}

template <typename T>
void ExpectNhwcPoolsAsNchw() {
  Tensor x = RandomTensor({2, 19, 7, 5}, -1, 1, 41, DTypeOf<T>());
  x.data<T>()[3] = std::numeric_limits<T>::quiet_NaN();
  for (int64_t i = 100; i < 140; ++i) x.data<T>()[i] = T(0.25);  // ties
  for (const NhwcPoolCase& c : NhwcPoolCases()) {
    auto attrs = [&](OpTester& t, const char* layout) {
      t.Attr("strides", c.strides)
          .Attr("paddings", c.paddings)
          .Attr("exclusive", c.exclusive)
          .Attr("ceil_mode", c.ceil_mode)
          .Attr("adaptive", c.adaptive)
          .Attr("global_pooling", c.global)
          .Attr("data_format", std::string(layout));
    };
    auto run = [&](const Tensor& in, const char* layout) {
      OpTester t("pool2d");
      Pool(t, c.type, in, c.ksize);
      attrs(t, layout);
      Status s = t.Run();
      EXPECT_TRUE(s.ok()) << c.name << ": " << s.ToString();
      return t.Out("Out");
    };
    auto grad = [&](const Tensor& in, const Tensor& out, const Tensor& dout,
                    const char* layout) {
      OpTester t("pool2d_grad");
      t.Input("X", in)
          .Input("Out", out)
          .Input("Out@GRAD", dout)
          .Output("X@GRAD")
          .Attr("pooling_type", std::string(c.type))
          .Attr("ksize", c.ksize);
      attrs(t, layout);
      Status s = t.Run();
      EXPECT_TRUE(s.ok()) << c.name << " grad: " << s.ToString();
      return t.Out("X@GRAD");
    };
    const Tensor nchw = run(x, "NCHW");
    const Tensor x_last = MoveChannels<T>(x, true);
    const Tensor out_last = run(x_last, "NHWC");
    ExpectSameValues<T>(nchw, MoveChannels<T>(out_last, false), c.name);
    const Tensor dout = RandomTensor(nchw.dims(), -1, 1, 43, DTypeOf<T>());
    ExpectSameValues<T>(
        grad(x, nchw, dout, "NCHW"),
        MoveChannels<T>(
            grad(x_last, out_last, MoveChannels<T>(dout, true), "NHWC"), false),
        std::string(c.name) + " grad");
  }
}

TEST(Pool2dKernelTest, ChannelsLastPoolsAsChannelsFirst) {
  ExpectNhwcPoolsAsNchw<float>();
  ExpectNhwcPoolsAsNchw<double>();
}

TEST(Pool2dKernelTest, WindowLargerThanImageIsAnError) {
  OpTester t("pool2d");
  Pool(t, "max", Iota(2, 2), {3, 3});
  Status s = t.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("'pool2d'"));
}

TEST(Pool2dKernelTest, UnknownPoolingTypeIsAnError) {
  OpTester t("pool2d");
  Pool(t, "min", Iota(4, 4), {2, 2});
  Status s = t.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("pooling_type"));
}

TEST(Pool2dKernelTest, RankThreeInputIsAnError) {
  OpTester t("pool2d");
  Pool(t, "max", RandomTensor({1, 4, 4}, -1, 1, 1), {2, 2});
  Status s = t.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("'pool2d'"));
}

TEST(Pool2dSchemaTest, UnknownBatchAtCompileTime) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 20, 24, 24});
  block.Var("x")->SetDType(DType::kFP32);
  block.Var("out");
  OpDesc* op = block.AppendOp("pool2d");
  op->SetInput("X", {"x"});
  op->SetOutput("Out", {"out"});
  op->SetAttr("ksize", std::vector<int>{2, 2});
  op->SetAttr("strides", std::vector<int>{2, 2});
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("out")->dims(), (Dims{-1, 20, 12, 12}));
}

// Against PaddlePaddle 2.6.2 (pool2d.json): a max window wholly in the
// padding (ceil_mode) is -FLT_MAX, as Paddle's; avg with ceil_mode; plain
// max; gradients through Paddle's pool2d_grad (Paddle scales avg's by a
// float32 1 / window also for double, parex divides in T: 1e-8 apart).
TEST(Pool2dKernelTest, MatchesPaddleIncludingWindowsInThePadding) {
  EXPECT_EQ(CheckPaddleGoldens("pool2d", {1e-8, 1e-6}, "pool2d.json"), 3);
}

}  // namespace
}  // namespace parex::testing
