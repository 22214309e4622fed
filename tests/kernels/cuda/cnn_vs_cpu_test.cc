// The convnet ops' CUDA kernels (conv2d, depthwise_conv2d, pool2d,
// batch_norm and their gradients) against the CPU kernels on random shapes
// (KernelPair): batch 1-4, channels 1-8, planes 3-12, kernels 1-5, strides
// 1-2, paddings 0-2 (symmetric, asymmetric, SAME, VALID), dilations 1-2,
// groups 1 and 2; every pooling mode (max with ties, avg exclusive or not,
// global, adaptive, ceil_mode); batch norm in training (in place), with a
// momentum tensor, with global statistics, NHWC and rank 2.
//
// Tolerance: |a - b| <= rel * max(|a|, |b|) + abs, rel 1e-5 (fp32) / 1e-12
// (fp64) and abs = kAbsPerTerm * terms, `terms` being the longest sum behind
// one output element of the case (a convolution's c/groups*kh*kw or
// n*oh*ow, a batch norm's n*h*w): the two sides sum in different orders, so
// a sum of many products near zero differs absolutely, not relatively.
// The cases run with two CPU contexts first (checking that they are
// well-formed for the CPU kernels); the CUDA comparison skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kernels/cpu/spatial/im2col.h"
#include "kernels/cuda/cuda_info.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/kernel_pair.h"

namespace parex {
namespace {

using namespace cuda_test;  // NOLINT: test helpers

struct CnnCase {
  std::string name;
  std::string type;
  int64_t terms;  // the longest sum behind one output element
  std::function<void(KernelPair&)> setup;
};

template <typename T>
struct CnnTolerance;
template <>
struct CnnTolerance<float> {
  static constexpr double kRel = 1e-5, kAbsPerTerm = 2e-7;
};
template <>
struct CnnTolerance<double> {
  static constexpr double kRel = 1e-12, kAbsPerTerm = 4e-16;
};

int Draw(std::mt19937& gen, int lo, int hi) {
  return lo + static_cast<int>(gen() % static_cast<uint32_t>(hi - lo + 1));
}

// Window attributes of a conv or pool: strides, paddings (2 or 4 entries)
// and the padding algorithm, with the output extents they give.
struct Window {
  std::vector<int> strides, paddings, dilations;
  std::string algorithm = "EXPLICIT";
  int64_t oh = 0, ow = 0;
};

// The output extents of `w` over an [h, w] plane with a kh x kw kernel (the
// CPU kernels' resolution); false when the window does not fit.
bool Resolve(int64_t h, int64_t w, int64_t kh, int64_t kw, bool ceil_mode,
             Window* win) {
  cpu::WindowDim dims[2];
  dims[0].in = h;
  dims[0].size = kh;
  dims[1].in = w;
  dims[1].size = kw;
  cpu::ResolveWindows(win->algorithm, win->strides, &win->dilations,
                      win->paddings, dims);
  int64_t out[2];
  for (int i = 0; i < 2; ++i) {
    const cpu::WindowDim& d = dims[i];
    const int64_t span = d.dilation * (d.size - 1) + 1;
    const int64_t room = d.in + d.pad_before + d.pad_after;
    if (room < span) return false;
    out[i] = (room - span + (ceil_mode ? d.stride - 1 : 0)) / d.stride + 1;
  }
  win->oh = out[0];
  win->ow = out[1];
  return true;
}

// A random window: `style` 0 symmetric, 1 asymmetric, 2 SAME, 3 VALID.
Window RandomWindow(std::mt19937& gen, int style, bool dilate) {
  Window w;
  w.strides = {Draw(gen, 1, 2), Draw(gen, 1, 2)};
  w.dilations = {dilate ? Draw(gen, 1, 2) : 1, dilate ? Draw(gen, 1, 2) : 1};
  if (style == 1) {
    w.paddings = {Draw(gen, 0, 2), Draw(gen, 0, 2), Draw(gen, 0, 2),
                  Draw(gen, 0, 2)};
  } else {
    w.paddings = {Draw(gen, 0, 2), Draw(gen, 0, 2)};
  }
  if (style == 2) w.algorithm = "SAME";
  if (style == 3) w.algorithm = "VALID";
  return w;
}

void SetWindowAttrs(KernelPair& p, const Window& w) {
  p.Attr<std::vector<int>>("strides", w.strides)
      .Attr<std::vector<int>>("paddings", w.paddings)
      .Attr<std::string>("padding_algorithm", w.algorithm);
}

const char* kStyles[] = {"symmetric", "asymmetric", "same", "valid"};

template <typename T>
void ConvCases(std::mt19937& gen, int style, std::vector<CnnCase>* cases) {
  for (bool depthwise : {false, true}) {
    int64_t n, c, m, h, w, kh, kw, groups;
    Window win;
    do {
      n = Draw(gen, 1, 4);
      groups = Draw(gen, 1, 2);
      c = groups * Draw(gen, 1, 4);
      m = groups * Draw(gen, 1, 4);
      if (depthwise) {
        groups = c = Draw(gen, 1, 8);
        m = c * Draw(gen, 1, 2);
      }
      h = Draw(gen, 3, 12);
      w = Draw(gen, 3, 12);
      kh = Draw(gen, 1, 5);
      kw = Draw(gen, 1, 5);
      win = RandomWindow(gen, style, true);
    } while (!Resolve(h, w, kh, kw, false, &win));
    const int64_t terms = std::max(
        {c / groups * kh * kw, m / groups * kh * kw, n * win.oh * win.ow});
    const uint32_t s = gen();
    const std::string type = depthwise ? "depthwise_conv2d" : "conv2d";
    const std::string name = type + "_" + kStyles[style];
    auto attrs = [=](KernelPair& p) {
      SetWindowAttrs(p, win);
      p.Attr<std::vector<int>>("dilations", win.dilations)
          .Attr<int>("groups", static_cast<int>(groups))
          .Attr<std::string>("data_format", "NCHW");
    };
    const Dims in_dims{n, c, h, w}, filter_dims{m, c / groups, kh, kw};
    const Dims out_dims{n, m, win.oh, win.ow};
    // conv2d alone has the fused Bias / ResidualData inputs.
    const bool fused = !depthwise && s % 2 == 0;
    cases->push_back(
        {name, type, terms, [=](KernelPair& p) {
           p.Input("Input", RandomHost<T>(in_dims, -1, 1, s))
               .Input("Filter", RandomHost<T>(filter_dims, -1, 1, s + 1))
               .Output("Output");
           if (fused) {
             p.Input("Bias", RandomHost<T>({m}, -1, 1, s + 2))
                 .Input("ResidualData", RandomHost<T>(out_dims, -1, 1, s + 3));
           }
           attrs(p);
         }});
    cases->push_back(
        {name + "_grad", type + "_grad", terms, [=](KernelPair& p) {
           p.Input("Input", RandomHost<T>(in_dims, -1, 1, s))
               .Input("Filter", RandomHost<T>(filter_dims, -1, 1, s + 1))
               .Input("Output@GRAD", RandomHost<T>(out_dims, -1, 1, s + 4))
               .Output("Input@GRAD")
               .Output("Filter@GRAD");
           if (fused) {
             p.Input("Bias", RandomHost<T>({m}, -1, 1, s + 2))
                 .Output("Bias@GRAD");
           }
           attrs(p);
         }});
  }
}

// Pooling attributes of one case.
struct PoolMode {
  std::string name;
  std::string type = "max";
  bool exclusive = true, global = false, adaptive = false, ceil_mode = false;
  bool ties = false;  // inputs from {-1, 0, 1}: max windows hold equal values
  int style = 0;      // of the window (RandomWindow)
};

std::vector<PoolMode> PoolModes() {
  std::vector<PoolMode> modes;
  for (int style = 0; style < 4; ++style) {
    modes.push_back({std::string("max_") + kStyles[style], "max"});
    modes.back().style = style;
    modes.push_back({std::string("avg_") + kStyles[style], "avg"});
    modes.back().style = style;
  }
  PoolMode m;
  m = {"max_ties", "max"};
  m.ties = true;
  modes.push_back(m);
  m = {"avg_inclusive", "avg"};
  m.exclusive = false;
  modes.push_back(m);
  m = {"avg_inclusive_asymmetric", "avg"};
  m.exclusive = false;
  m.style = 1;
  modes.push_back(m);
  for (const char* type : {"max", "avg"}) {
    m = {std::string(type) + "_ceil_mode", type};
    m.ceil_mode = true;
    m.style = 1;
    modes.push_back(m);
    m = {std::string(type) + "_global", type};
    m.global = true;
    modes.push_back(m);
    m = {std::string(type) + "_adaptive", type};
    m.adaptive = true;
    modes.push_back(m);
  }
  return modes;
}

template <typename T>
Tensor PoolInput(const Dims& dims, bool ties, uint32_t seed) {
  Tensor x = RandomHost<T>(dims, -2, 2, seed);
  if (ties) {
    for (int64_t i = 0; i < x.numel(); ++i) {
      x.data<T>()[i] = static_cast<T>(std::round(x.data<T>()[i] / 2));
    }
  }
  return x;
}

template <typename T>
void PoolCases(std::mt19937& gen, std::vector<CnnCase>* cases) {
  for (const PoolMode& mode : PoolModes()) {
    int64_t n, c, h, w, kh, kw;
    Window win;
    do {
      n = Draw(gen, 1, 4);
      c = Draw(gen, 1, 8);
      h = Draw(gen, 3, 12);
      w = Draw(gen, 3, 12);
      kh = Draw(gen, 1, 5);
      kw = Draw(gen, 1, 5);
      win = RandomWindow(gen, mode.style, false);
    } while (!Resolve(h, w, kh, kw, mode.ceil_mode, &win));
    if (mode.global) win.oh = win.ow = 1;
    if (mode.adaptive) {
      kh = win.oh = Draw(gen, 1, static_cast<int>(h));
      kw = win.ow = Draw(gen, 1, static_cast<int>(w));
    }
    const uint32_t s = gen();
    const Dims x_dims{n, c, h, w}, out_dims{n, c, win.oh, win.ow};
    auto attrs = [=](KernelPair& p) {
      SetWindowAttrs(p, win);
      p.Attr<std::string>("pooling_type", mode.type)
          .Attr<std::vector<int>>("ksize",
                                  {static_cast<int>(kh), static_cast<int>(kw)})
          .Attr<bool>("exclusive", mode.exclusive)
          .Attr<bool>("global_pooling", mode.global)
          .Attr<bool>("adaptive", mode.adaptive)
          .Attr<bool>("ceil_mode", mode.ceil_mode)
          .Attr<std::string>("data_format", "NCHW");
    };
    const int64_t terms = mode.global ? h * w : 25;
    cases->push_back(
        {"pool2d_" + mode.name, "pool2d", terms, [=](KernelPair& p) {
           p.Input("X", PoolInput<T>(x_dims, mode.ties, s)).Output("Out");
           attrs(p);
         }});
    // The gradient reads the forward's true Out (max pooling looks for it
    // in each window), computed here by the CPU kernel.
    cases->push_back(
        {"pool2d_grad_" + mode.name, "pool2d_grad", terms, [=](KernelPair& p) {
           KernelPair forward("pool2d");
           forward.Input("X", PoolInput<T>(x_dims, mode.ties, s)).Output("Out");
           attrs(forward);
           CpuDeviceContext cpu(Place::CPU(0));
           StatusOr<std::map<std::string, Tensor>> out = forward.Run(&cpu);
           PAREX_CHECK(out.ok(), out.status().ToString());
           p.Input("X", PoolInput<T>(x_dims, mode.ties, s))
               .Input("Out", std::move(out->at("Out")))
               .Input("Out@GRAD", RandomHost<T>(out_dims, -1, 1, s + 1))
               .Output("X@GRAD");
           attrs(p);
         }});
  }
}

// Batch norm attributes of one case.
struct BnMode {
  std::string name;
  bool is_test = false, use_global_stats = false, trainable = false;
  bool momentum_tensor = false;
  std::string layout = "NCHW";
  int rank = 4;
};

template <typename T>
void BatchNormCases(std::mt19937& gen, std::vector<CnnCase>* cases) {
  std::vector<BnMode> modes(7);
  modes[0].name = "train";
  modes[1].name = "train_momentum_tensor";
  modes[1].momentum_tensor = true;
  modes[2].name = "is_test";
  modes[2].is_test = true;
  modes[3].name = "use_global_stats";
  modes[3].use_global_stats = true;
  modes[4].name = "is_test_trainable_statistics";
  modes[4].is_test = modes[4].trainable = true;
  modes[5].name = "train_nhwc";
  modes[5].layout = "NHWC";
  modes[6].name = "train_rank2";
  modes[6].rank = 2;
  for (const BnMode& mode : modes) {
    const int64_t n = Draw(gen, 1, 4), c = Draw(gen, 1, 8);
    const int64_t h = Draw(gen, 3, 12), w = Draw(gen, 3, 12);
    const Dims x_dims = mode.rank == 2          ? Dims{n * h, c}
                        : mode.layout == "NHWC" ? Dims{n, h, w, c}
                                                : Dims{n, c, h, w};
    const int64_t terms = std::max<int64_t>(16, n * h * w);
    const float momentum = gen() % 2 ? 0.9f : 0.7f;
    const uint32_t s = gen();
    auto attrs = [=](KernelPair& p) {
      p.Attr<float>("epsilon", 1e-5f)
          .Attr<float>("momentum", momentum)
          .Attr<std::string>("data_layout", mode.layout)
          .Attr<bool>("is_test", mode.is_test)
          .Attr<bool>("use_global_stats", mode.use_global_stats)
          .Attr<bool>("trainable_statistics", mode.trainable);
    };
    // X with a per-case offset, so the mean is not near zero.
    auto inputs = [=](KernelPair& p) {
      p.Input("X", RandomHost<T>(x_dims, -2, 3, s))
          .Input("Scale", RandomHost<T>({c}, 0.5, 1.5, s + 1))
          .Input("Bias", RandomHost<T>({c}, -1, 1, s + 2))
          .Input("Mean", RandomHost<T>({c}, -0.5, 0.5, s + 3))
          .Input("Variance", RandomHost<T>({c}, 0.5, 2, s + 4));
    };
    auto forward = [=](KernelPair& p) {
      inputs(p);
      p.Output("Y")
          .Output("MeanOut", "Mean_0")
          .Output("VarianceOut", "Variance_0")
          .Output("SavedMean")
          .Output("SavedVariance");
      if (mode.momentum_tensor) {
        Tensor m(DType::kFP32, Dims{1});
        m.data<float>()[0] = 0.8f;
        p.Input("MomentumTensor", std::move(m));
      }
      attrs(p);
    };
    cases->push_back({"batch_norm_" + mode.name, "batch_norm", terms, forward});
    // The gradient reads the forward's saved statistics (CPU kernel).
    cases->push_back(
        {"batch_norm_grad_" + mode.name, "batch_norm_grad", terms,
         [=](KernelPair& p) {
           KernelPair fwd("batch_norm");
           forward(fwd);
           CpuDeviceContext cpu(Place::CPU(0));
           StatusOr<std::map<std::string, Tensor>> out = fwd.Run(&cpu);
           PAREX_CHECK(out.ok(), out.status().ToString());
           inputs(p);
           p.Input("SavedMean", std::move(out->at("SavedMean")))
               .Input("SavedVariance", std::move(out->at("SavedVariance")))
               .Input("Y@GRAD", RandomHost<T>(x_dims, -1, 1, s + 5))
               .Output("X@GRAD")
               .Output("Scale@GRAD")
               .Output("Bias@GRAD");
           attrs(p);
         }});
  }
}

template <typename T>
std::vector<CnnCase> CnnOpCases(uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<CnnCase> cases;
  for (int style = 0; style < 4; ++style) ConvCases<T>(gen, style, &cases);
  PoolCases<T>(gen, &cases);
  BatchNormCases<T>(gen, &cases);
  return cases;
}

template <typename T>
class CnnCudaVsCpuTest : public ::testing::Test {
 protected:
  // Every case over three random draws, `tested` against the CPU kernels.
  void RunCases(DeviceContext* tested) {
    CpuDeviceContext cpu(Place::CPU(0));
    for (uint32_t seed : {11u, 12u, 13u}) {
      for (const CnnCase& c : CnnOpCases<T>(seed)) {
        SCOPED_TRACE(c.name + " seed " + std::to_string(seed));
        KernelPair pair(c.type);
        c.setup(pair);
        ASSERT_GT(pair.num_outputs(), 0u);
        pair.ExpectSame(&cpu, tested, CnnTolerance<T>::kRel,
                        CnnTolerance<T>::kAbsPerTerm * c.terms);
      }
    }
  }
};

using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CnnCudaVsCpuTest, FloatTypes);

TYPED_TEST(CnnCudaVsCpuTest, HarnessAgreesWithItselfOnTwoCpuContexts) {
  CpuDeviceContext other(Place::CPU(0));
  this->RunCases(&other);
}

// The cases cover what they claim: every op type and window style, and
// windows that lie wholly in the padding are among them.
TYPED_TEST(CnnCudaVsCpuTest, CasesCoverEveryOpAndMode) {
  std::set<std::string> types, names;
  for (const CnnCase& c : CnnOpCases<TypeParam>(11)) {
    types.insert(c.type);
    names.insert(c.name);
  }
  for (const char* type :
       {"conv2d", "conv2d_grad", "depthwise_conv2d", "depthwise_conv2d_grad",
        "pool2d", "pool2d_grad", "batch_norm", "batch_norm_grad"}) {
    EXPECT_EQ(types.count(type), 1u) << type;
  }
  for (const char* name :
       {"conv2d_asymmetric_grad", "conv2d_same", "pool2d_grad_max_ties",
        "pool2d_avg_adaptive", "pool2d_grad_max_ceil_mode",
        "batch_norm_grad_is_test", "batch_norm_train_nhwc"}) {
    EXPECT_EQ(names.count(name), 1u) << name;
  }
}

TYPED_TEST(CnnCudaVsCpuTest, ConvnetOpsMatchTheCpuKernels) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  this->RunCases(Cuda0());
}

}  // namespace
}  // namespace parex
