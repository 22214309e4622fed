// SkinnyGemm (kernels/cpu/skinny_gemm.h): few rows by a large constant
// matrix, against a double-precision product written here; and the two ops
// that take it (a constant 1x1 NHWC conv2d with its fused epilogue, a
// constant-Y matmul_v2) against the same ops on their other paths.
#include "kernels/cpu/skinny_gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu/blas.h"
#include "kernels/cpu/spatial/dnnl_conv.h"
#include "tests/kernels/op_tester.h"

namespace parex::testing {
namespace {

std::vector<float> Values(int64_t n, int seed) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + seed));
  }
  return v;
}

// out[r, c] as SkinnyGemm's contract says, in double precision: w is
// [k, n], or [n, k] read as its transpose.
double Want(const std::vector<float>& x, const std::vector<float>& w, int64_t k,
            int64_t n, bool trans, const cpu::SkinnyEpilogue& e, int64_t r,
            int64_t c) {
  double want = 0;
  for (int64_t i = 0; i < k; ++i) {
    want += static_cast<double>(x[r * k + i]) *
            (trans ? w[c * k + i] : w[i * n + c]);
  }
  if (e.bias != nullptr) want += e.bias[c];
  if (e.residual != nullptr) want += e.residual[r * n + c];
  if (e.activation >= 1) want = std::max(want, 0.0);
  if (e.activation == 2)
    want = std::min(want, static_cast<double>(e.threshold));
  return want;
}

// Every row count around the 4-row tiles, column counts that end in a
// partial panel and in a partial group of 4 panels, both packings, each
// part of the epilogue (relu6 clipping at 0.5 so that it clips).
TEST(SkinnyGemmTest, MatchesADoubleProductWithEveryEpilogue) {
  if (!cpu::SkinnyGemmAvailable()) GTEST_SKIP() << "no AVX-512 here";
  const int64_t k = 37;
  for (const int64_t n : {16, 37, 80, 1000}) {
    const std::vector<float> w = Values(k * n, 1);  // [k, n] or [n, k]
    const std::vector<float> bias = Values(n, 2);
    for (const bool trans : {false, true}) {
      cpu::SkinnyPanels panels;
      panels.Pack(k, n, trans, w.data());
      for (int64_t m = 1; m <= 17; ++m) {
        const std::vector<float> x = Values(m * k, 3);
        const std::vector<float> residual = Values(m * n, 4);
        for (int activation = 0; activation <= 2; ++activation) {
          cpu::SkinnyEpilogue e;
          e.bias = activation == 1 ? nullptr : bias.data();
          e.residual = activation == 0 ? nullptr : residual.data();
          e.activation = activation;
          e.threshold = 0.5f;
          std::vector<float> out(static_cast<size_t>(m * n), -7.0f);
          cpu::SkinnyGemm(m, x.data(), panels, e, out.data());
          for (int64_t r = 0; r < m; ++r) {
            for (int64_t c = 0; c < n; ++c) {
              const double want = Want(x, w, k, n, trans, e, r, c);
              ASSERT_NEAR(out[r * n + c], want, 1e-4)
                  << "n " << n << " trans " << trans << " m " << m
                  << " activation " << activation << " at " << r << "," << c;
            }
          }
        }
      }
    }
  }
}

// Where it applies: few rows by a matrix of at least 1 MiB.
TEST(SkinnyGemmTest, TakesFewRowsByALargeMatrix) {
  EXPECT_TRUE(cpu::SkinnyGemmFaster(4, 1024, 1024));
  EXPECT_TRUE(cpu::SkinnyGemmFaster(1, 1024, 1000));
  EXPECT_FALSE(cpu::SkinnyGemmFaster(17, 1024, 1024));  // rows
  EXPECT_FALSE(cpu::SkinnyGemmFaster(4, 256, 256));     // in cache
}

// On a thread whose OpenMP team is two wide (the panel groups split over
// the team where the build has OpenMP) the product is the one-thread one,
// bit for bit: each output's sum is one thread's, in the same order.
TEST(SkinnyGemmTest, ATeamGivesTheOneThreadBits) {
  if (!cpu::SkinnyGemmAvailable()) GTEST_SKIP() << "no AVX-512 here";
  const int64_t m = 4, k = 1024, n = 1000;
  const std::vector<float> w = Values(k * n, 5), x = Values(m * k, 6);
  cpu::SkinnyPanels panels;
  panels.Pack(k, n, /*trans=*/true, w.data());
  std::vector<float> one(m * n), team(m * n);
  cpu::SkinnyGemm(m, x.data(), panels, cpu::SkinnyEpilogue(), one.data());
  cpu::SetIntraOpThreads(2);
  cpu::SkinnyGemm(m, x.data(), panels, cpu::SkinnyEpilogue(), team.data());
  cpu::SetIntraOpThreads(1);
  cpu::UseIntraOpThreads();
  EXPECT_EQ(one, team);
  EXPECT_NEAR(one[0], Want(x, w, k, n, true, cpu::SkinnyEpilogue(), 0, 0),
              1e-3);
}

// A constant 1x1 conv2d on NHWC tensors at batch 1 (MobileNet's 1024 -> 1024
// on 2x2, with its fused bias, residual and relu6) gives what the same op
// gives on its NCHW view through im2col.
TEST(SkinnyGemmTest, ConstantOneByOneConvMatchesItsNchwView) {
  if (!cpu::SkinnyGemmAvailable() || !cpu::DnnlAvailable()) {
    GTEST_SKIP() << "no AVX-512 or oneDNN here";
  }
  const Tensor input = RandomTensor({1, 2, 2, 1024}, -1, 1, 41, DType::kFP32);
  const Tensor filter =
      RandomTensor({1024, 1024, 1, 1}, -0.05, 0.05, 42, DType::kFP32);
  const Tensor bias = RandomTensor({1024}, -1, 1, 43, DType::kFP32);
  const Tensor residual =
      RandomTensor({1, 2, 2, 1024}, -1, 1, 44, DType::kFP32);
  auto run = [&](cpu::DnnlConvMode mode) {
    cpu::SetDnnlConvMode(mode);
    OpTester t("conv2d");
    t.Input("Input", input)
        .Input("Filter", filter)
        .Input("Bias", bias)
        .Input("ResidualData", residual)
        .Output("Output")
        .Attr("strides", std::vector<int>{1, 1})
        .Attr("paddings", std::vector<int>{0, 0})
        .Attr("dilations", std::vector<int>{1, 1})
        .Attr("groups", 1)
        .Attr("data_format", std::string("NHWC"))
        .Attr("fuse_activation", std::string("relu6"))
        .Attr("fuse_alpha", 0.5f)
        .Attr("constant_filter", true);
    EXPECT_TRUE(t.Run().ok());
    return t.Out("Output");
  };
  const int64_t before = cpu::DnnlConvExecutions();
  const Tensor skinny = run(cpu::DnnlConvMode::kWhereFaster);
  EXPECT_EQ(cpu::DnnlConvExecutions(), before);  // no oneDNN primitive ran
  const Tensor view = run(cpu::DnnlConvMode::kNever);
  cpu::SetDnnlConvMode(cpu::DnnlConvMode::kWhereFaster);
  ASSERT_EQ(skinny.dims(), view.dims());
  int clipped = 0;
  for (int64_t i = 0; i < view.numel(); ++i) {
    ASSERT_NEAR(skinny.data<float>()[i], view.data<float>()[i], 1e-4) << i;
    clipped += view.data<float>()[i] == 0.5f;
  }
  EXPECT_GT(clipped, 0);  // the epilogue's clip was exercised
}

// A matmul_v2 by a constant Y at batch 1 (an fc's 1024 x 1000 weights, Y
// read as it is and as its transpose) gives what the op gives without the
// constant_y attribute (cpu::Gemm).
TEST(SkinnyGemmTest, ConstantMatmulMatchesThePlainProduct) {
  if (!cpu::SkinnyGemmAvailable()) GTEST_SKIP() << "no AVX-512 here";
  for (const bool trans_y : {false, true}) {
    const Tensor x = RandomTensor({1, 1024}, -1, 1, 51, DType::kFP32);
    const Tensor y = RandomTensor(trans_y ? Dims{1000, 1024} : Dims{1024, 1000},
                                  -1, 1, 52, DType::kFP32);
    auto run = [&](bool constant) {
      OpTester t("matmul_v2");
      t.Input("X", x)
          .Input("Y", y)
          .Output("Out")
          .Attr("trans_x", false)
          .Attr("trans_y", trans_y);
      if (constant) t.Attr("constant_y", true);
      EXPECT_TRUE(t.Run().ok());
      return t.Out("Out");
    };
    const Tensor packed = run(true), plain = run(false);
    ASSERT_EQ(packed.dims(), (Dims{1, 1000}));
    for (int64_t i = 0; i < plain.numel(); ++i) {
      ASSERT_NEAR(packed.data<float>()[i], plain.data<float>()[i], 1e-3)
          << "trans_y " << trans_y << " at " << i;
    }
  }
}

}  // namespace
}  // namespace parex::testing
