// The training ops' CUDA kernels against the CPU kernels on random shapes
// and inputs (KernelPair): softmax and softmax with cross-entropy (hard int64
// and int32 labels with ignored rows, soft labels, a middle axis) and their
// gradients, the activation, mean and mul gradients, the binary
// element-wise gradients (same shape, a bias row, Fluid's mid broadcast,
// numpy's both-way and larger-Y broadcast),
// top_k and accuracy, and sgd, momentum and adam (in place, with gradient
// addends, beta tensors, global beta powers). fp32 within 1e-5 relative, fp64
// within 1e-12. The same cases run with two CPU contexts first, which checks
// the harness and the cases where no GPU is visible; the CUDA comparison skips
// then.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_info.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/kernel_pair.h"

namespace parex {
namespace {

using namespace cuda_test;  // NOLINT: test helpers

struct OpCase {
  std::string name;
  std::string type;
  std::function<void(KernelPair&)> setup;
};

template <typename T>
Tensor Scalar(double v) {
  Tensor t(DTypeOf<T>(), Dims{1});
  t.data<T>()[0] = static_cast<T>(v);
  return t;
}

template <typename T>
void SoftmaxCases(std::mt19937& gen, std::vector<OpCase>* cases) {
  auto extent = [&](int lo, int hi) {
    return static_cast<int64_t>(lo + gen() % (hi - lo + 1));
  };
  const int64_t rows = extent(1, 40), classes = extent(2, 20);
  const int64_t outer = extent(1, 4), mid = extent(2, 7), inner = extent(1, 5);
  const uint32_t s = gen();
  cases->push_back({"softmax", "softmax", [=](KernelPair& p) {
                      p.Input("X", RandomHost<T>({rows, classes}, -4, 4, s))
                          .Output("Out")
                          .template Attr<int>("axis", -1);
                    }});
  cases->push_back({"softmax_middle_axis", "softmax", [=](KernelPair& p) {
                      p.Input("X",
                              RandomHost<T>({outer, mid, inner}, -4, 4, s + 1))
                          .Output("Out")
                          .template Attr<int>("axis", 1);
                    }});
  cases->push_back({"softmax_grad", "softmax_grad", [=](KernelPair& p) {
                      p.Input("Out", RandomHost<T>({rows, classes}, 0, 1, s))
                          .Input("Out@GRAD",
                                 RandomHost<T>({rows, classes}, -1, 1, s + 2))
                          .Output("X@GRAD")
                          .template Attr<int>("axis", -1);
                    }});
  auto xent = [=](const std::string& name, bool soft, bool int32, int axis,
                  Dims logits, Dims label_dims) {
    const int64_t n = logits[axis < 0 ? logits.size() - 1 : axis];
    cases->push_back(
        {name, "softmax_with_cross_entropy", [=](KernelPair& p) {
           p.Input("Logits", RandomHost<T>(logits, -5, 5, s + 3));
           if (soft) {
             p.Input("Label", RandomHost<T>(logits, 0, 1, s + 4));
           } else if (int32) {
             p.Input("Label", RandomLabels<int32_t>(label_dims, n, s + 4, 3));
           } else {
             p.Input("Label", RandomLabels<int64_t>(label_dims, n, s + 4, 3));
           }
           p.Output("Softmax").Output("Loss").template Attr<bool>("soft_label",
                                                                  soft);
           p.template Attr<int>("ignore_index", -100)
               .template Attr<int>("axis", axis);
         }});
    cases->push_back(
        {name + "_grad", "softmax_with_cross_entropy_grad", [=](KernelPair& p) {
           p.Input("Softmax", RandomHost<T>(logits, 0, 1, s + 5));
           if (soft) {
             p.Input("Label", RandomHost<T>(logits, 0, 1, s + 4));
           } else if (int32) {
             p.Input("Label", RandomLabels<int32_t>(label_dims, n, s + 4, 3));
           } else {
             p.Input("Label", RandomLabels<int64_t>(label_dims, n, s + 4, 3));
           }
           p.Input("Loss@GRAD", RandomHost<T>(label_dims, -1, 1, s + 6));
           p.Output("Logits@GRAD").template Attr<bool>("soft_label", soft);
           p.template Attr<int>("ignore_index", -100)
               .template Attr<int>("axis", axis);
         }});
  };
  xent("xent_hard", false, false, -1, {rows, classes}, {rows, 1});
  xent("xent_int32", false, true, -1, {rows, classes}, {rows, 1});
  xent("xent_soft", true, false, -1, {rows, classes}, {rows, 1});
  xent("xent_middle_axis", false, false, 1, {outer, mid, inner},
       {outer, 1, inner});
}

template <typename T>
void GradCases(std::mt19937& gen, std::vector<OpCase>* cases) {
  const int64_t a = 1 + gen() % 30, b = 1 + gen() % 30, c = 1 + gen() % 9;
  const uint32_t s = gen();
  for (const char* type : {"relu_grad", "sigmoid_grad", "tanh_grad"}) {
    cases->push_back({type, type, [=](KernelPair& p) {
                        p.Input("Out", RandomHost<T>({a, b}, -1, 1, s))
                            .Input("Out@GRAD",
                                   RandomHost<T>({a, b}, -1, 1, s + 1))
                            .Output("X@GRAD");
                      }});
  }
  cases->push_back({"mean_grad", "mean_grad", [=](KernelPair& p) {
                      p.Input("X", RandomHost<T>({a, b}, -1, 1, s))
                          .Input("Out@GRAD", RandomHost<T>({1}, -2, 2, s + 2))
                          .Output("X@GRAD");
                    }});
  cases->push_back({"mul_grad", "mul_grad", [=](KernelPair& p) {
                      p.Input("X", RandomHost<T>({a, c, 4}, -1, 1, s))
                          .Input("Y", RandomHost<T>({4, b}, -1, 1, s + 3))
                          .Input("Out@GRAD",
                                 RandomHost<T>({a, c, b}, -1, 1, s + 4))
                          .Output("X@GRAD")
                          .Output("Y@GRAD")
                          .template Attr<int>("x_num_col_dims", 2)
                          .template Attr<int>("y_num_col_dims", 1);
                    }});
}

template <typename T>
void BinaryGradCases(std::mt19937& gen, std::vector<OpCase>* cases) {
  const int64_t a = 1 + gen() % 6, b = 1 + gen() % 5, c = 1 + gen() % 7;
  const uint32_t s = gen();
  struct Shapes {
    const char* name;
    Dims x, y, out;
    int axis;
  };
  const Dims full = {a, b, c};
  const std::vector<Shapes> shapes = {
      {"same", full, full, full, -1},
      {"bias", full, {c}, full, -1},
      {"mid", full, {b}, full, 1},
      {"mid_trailing_one", full, {b, 1}, full, 1},
      {"both_ways", {a, 1, c}, {b, 1}, full, -1},
      {"y_larger", {c}, full, full, -1}};
  for (const char* type : {"elementwise_add_grad", "elementwise_sub_grad",
                           "elementwise_mul_grad", "elementwise_div_grad",
                           "elementwise_max_grad", "elementwise_min_grad"}) {
    for (const Shapes& sh : shapes) {
      cases->push_back(
          {std::string(type) + "_" + sh.name, type, [=](KernelPair& p) {
             // Y away from 0 (div), X and Y apart (max/min ties).
             p.Input("X", RandomHost<T>(sh.x, -2, 2, s))
                 .Input("Y", RandomHost<T>(sh.y, 0.5, 1.5, s + 1))
                 .Input("Out", RandomHost<T>(sh.out, -1, 1, s + 2))
                 .Input("Out@GRAD", RandomHost<T>(sh.out, -1, 1, s + 3))
                 .Output("X@GRAD")
                 .Output("Y@GRAD")
                 .template Attr<int>("axis", sh.axis);
           }});
    }
  }
}

// Dropout keeps the same elements on both (the CUDA kernel draws the CPU
// kernel's mask from the same seed), in training and test mode.
template <typename T>
void DropoutCases(std::mt19937& gen, std::vector<OpCase>* cases) {
  const Dims d = {static_cast<int64_t>(1 + gen() % 20),
                  static_cast<int64_t>(1 + gen() % 30)};
  const uint32_t s = gen();
  for (int variant = 0; variant < 4; ++variant) {
    const bool fix_seed = variant % 2 == 1;
    const bool upscale = variant >= 2;
    const std::string how = std::string(upscale ? "upscale" : "downgrade") +
                            (fix_seed ? "_fixed_seed" : "");
    cases->push_back({"dropout_" + how, "dropout", [=](KernelPair& p) {
                        p.Input("X", RandomHost<T>(d, -1, 1, s))
                            .Output("Out")
                            .Output("Mask")
                            .template Attr<float>("dropout_prob", 0.3f)
                            .template Attr<bool>("is_test", false)
                            .template Attr<bool>("fix_seed", fix_seed)
                            .template Attr<int>("seed", 7)
                            .template Attr<std::string>(
                                "dropout_implementation",
                                upscale ? "upscale_in_train"
                                        : "downgrade_in_infer");
                      }});
    cases->push_back(
        {"dropout_grad_" + how, "dropout_grad", [=](KernelPair& p) {
           Tensor mask = RandomLabels<int32_t>(d, 2, s + 1);
           Tensor bytes(DType::kUInt8, d);
           for (int64_t i = 0; i < mask.numel(); ++i) {
             bytes.data<uint8_t>()[i] =
                 static_cast<uint8_t>(mask.data<int32_t>()[i]);
           }
           p.Input("Out@GRAD", RandomHost<T>(d, -1, 1, s + 2))
               .Input("Mask", std::move(bytes))
               .Output("X@GRAD")
               .template Attr<float>("dropout_prob", 0.3f)
               .template Attr<bool>("is_test", variant == 3)
               .template Attr<std::string>(
                   "dropout_implementation",
                   upscale ? "upscale_in_train" : "downgrade_in_infer");
         }});
  }
}

template <typename T>
void MetricCases(std::mt19937& gen, std::vector<OpCase>* cases) {
  const int64_t rows = 1 + gen() % 30, classes = 2 + gen() % 12;
  const int k = 1 + static_cast<int>(gen() % std::min<int64_t>(classes, 5));
  const uint32_t s = gen();
  cases->push_back({"top_k", "top_k", [=](KernelPair& p) {
                      p.Input("X", RandomHost<T>({rows, classes}, -3, 3, s))
                          .Output("Out")
                          .Output("Indices")
                          .template Attr<int>("k", k);
                    }});
  for (int v = 0; v < 3; ++v) {
    // Paddle's tie order: integer values tie often.
    cases->push_back(
        {"top_k_v2_" + std::to_string(v), "top_k_v2", [=](KernelPair& p) {
           Tensor x = RandomHost<T>({rows, classes}, -3, 3, s + 5);
           for (int64_t i = 0; i < x.numel(); ++i) {
             x.data<T>()[i] = std::round(x.data<T>()[i]);
           }
           p.Input("X", std::move(x))
               .Output("Out")
               .Output("Indices")
               .template Attr<int>("k", k)
               .template Attr<int>("axis", v == 2 ? 0 : -1)
               .template Attr<bool>("largest", v != 1)
               .template Attr<bool>("sorted", true);
           if (v == 2) p.template Attr<int>("k", 1);
         }});
  }
  cases->push_back(
      {"accuracy", "accuracy", [=](KernelPair& p) {
         Tensor indices = RandomLabels<int64_t>({rows, k}, classes, s + 1);
         p.Input("Out", RandomHost<T>({rows, k}, 0, 1, s))
             .Input("Indices", std::move(indices))
             .Input("Label", RandomLabels<int64_t>({rows, 1}, classes, s + 2))
             .Output("Accuracy")
             .Output("Correct")
             .Output("Total");
       }});
}

template <typename T>
void OptimizerCases(std::mt19937& gen, std::vector<OpCase>* cases) {
  const Dims d = {static_cast<int64_t>(1 + gen() % 50),
                  static_cast<int64_t>(1 + gen() % 20)};
  const uint32_t s = gen();
  cases->push_back({"sgd_in_place", "sgd", [=](KernelPair& p) {
                      p.Input("Param", RandomHost<T>(d, -1, 1, s))
                          .Input("Grad", RandomHost<T>(d, -1, 1, s + 1))
                          .Input("LearningRate", Scalar<float>(0.05))
                          .Output("ParamOut", "Param_0");
                    }});
  for (bool nesterov : {false, true}) {
    cases->push_back(
        {nesterov ? "momentum_nesterov_l2" : "momentum", "momentum",
         [=](KernelPair& p) {
           p.Input("Param", RandomHost<T>(d, -1, 1, s))
               .Input("Grad", RandomHost<T>(d, -1, 1, s + 1))
               .Input("Velocity", RandomHost<T>(d, -1, 1, s + 2))
               .Input("LearningRate", Scalar<float>(0.1))
               .Output("ParamOut", "Param_0")
               .Output("VelocityOut", "Velocity_0")
               .template Attr<float>("mu", 0.9f)
               .template Attr<bool>("use_nesterov", nesterov)
               .template Attr<float>("rescale_grad", nesterov ? 0.5f : 1.0f)
               .template Attr<std::string>("regularization_method",
                                           nesterov ? "l2_decay" : "")
               .template Attr<float>("regularization_coeff",
                                     nesterov ? 1e-3f : 0.0f);
         }});
  }
  // Adam after a few steps (beta powers below 1), in place, optionally with
  // addends, beta tensors or global beta powers.
  for (int variant = 0; variant < 4; ++variant) {
    const char* names[] = {"adam", "adam_addends", "adam_beta_tensors",
                           "adam_global_beta_pow"};
    cases->push_back(
        {names[variant], "adam", [=](KernelPair& p) {
           p.Input("Param", RandomHost<T>(d, -1, 1, s))
               .Input("Grad", RandomHost<T>(d, -1, 1, s + 1))
               .Input("Moment1", RandomHost<T>(d, -0.1, 0.1, s + 2))
               .Input("Moment2", RandomHost<T>(d, 0, 0.01, s + 3))
               .Input("LearningRate", Scalar<float>(0.001))
               .Input("Beta1Pow", Scalar<float>(0.9 * 0.9 * 0.9))
               .Input("Beta2Pow", Scalar<float>(0.999 * 0.999 * 0.999))
               .Output("ParamOut", "Param_0")
               .Output("Moment1Out", "Moment1_0")
               .Output("Moment2Out", "Moment2_0")
               .Output("Beta1PowOut", "Beta1Pow_0")
               .Output("Beta2PowOut", "Beta2Pow_0")
               .template Attr<float>("beta1", 0.9f)
               .template Attr<float>("beta2", 0.999f)
               .template Attr<float>("epsilon", 1e-8f)
               .template Attr<bool>("lazy_mode", false)
               .template Attr<bool>("use_global_beta_pow", variant == 3);
           if (variant == 1) {
             std::vector<Tensor> addends;
             addends.push_back(RandomHost<T>(d, -1, 1, s + 4));
             addends.push_back(RandomHost<T>(d, -1, 1, s + 5));
             p.Input("GradAddends", std::move(addends));
           }
           if (variant == 2) {
             p.Input("Beta1Tensor", Scalar<float>(0.8))
                 .Input("Beta2Tensor", Scalar<float>(0.99))
                 .Input("EpsilonTensor", Scalar<float>(1e-6));
           }
         }});
  }
}

template <typename T>
std::vector<OpCase> TrainingOpCases(uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<OpCase> cases;
  SoftmaxCases<T>(gen, &cases);
  GradCases<T>(gen, &cases);
  BinaryGradCases<T>(gen, &cases);
  MetricCases<T>(gen, &cases);
  DropoutCases<T>(gen, &cases);
  OptimizerCases<T>(gen, &cases);
  return cases;
}

template <typename T>
struct PairTolerance;
template <>
struct PairTolerance<float> {
  static constexpr double kRel = 1e-5, kAbs = 1e-6;
};
template <>
struct PairTolerance<double> {
  static constexpr double kRel = 1e-12, kAbs = 1e-14;
};

template <typename T>
class CudaVsCpuTest : public ::testing::Test {
 protected:
  // Every case over three random draws, `tested` against the CPU kernels.
  void RunCases(DeviceContext* tested) {
    CpuDeviceContext cpu(Place::CPU(0));
    for (uint32_t seed : {1u, 2u, 3u}) {
      for (const OpCase& c : TrainingOpCases<T>(seed)) {
        SCOPED_TRACE(c.name + " seed " + std::to_string(seed));
        KernelPair pair(c.type);
        c.setup(pair);
        ASSERT_GT(pair.num_outputs(), 0u);
        pair.ExpectSame(&cpu, tested, PairTolerance<T>::kRel,
                        PairTolerance<T>::kAbs);
      }
    }
  }
};

using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CudaVsCpuTest, FloatTypes);

TYPED_TEST(CudaVsCpuTest, HarnessAgreesWithItselfOnTwoCpuContexts) {
  CpuDeviceContext other(Place::CPU(0));
  this->RunCases(&other);
}

TYPED_TEST(CudaVsCpuTest, TheComparisonNoticesOneElementOff) {
  using T = TypeParam;
  const Tensor a = RandomHost<T>({3, 4}, -1, 1, 7);
  Tensor b = RandomHost<T>({3, 4}, -1, 1, 7);
  EXPECT_TRUE(KernelPair::Near(a, b, 0, 0));
  b.data<T>()[5] *= 1 + 1e-3;
  EXPECT_FALSE(
      KernelPair::Near(a, b, PairTolerance<T>::kRel, PairTolerance<T>::kAbs));
  EXPECT_FALSE(KernelPair::Near(a, RandomHost<T>({4, 3}, -1, 1, 7), 1, 1));
}

TYPED_TEST(CudaVsCpuTest, TrainingOpsMatchTheCpuKernels) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  Cuda0();  // registers the CUDA kernels
  // A fresh context: its random generator starts where the CPU context's
  // does, so dropout's unseeded draws agree.
  auto fresh = CudaDeviceContext::Create(Place::CUDA(0));
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  this->RunCases(fresh->get());
}

}  // namespace
}  // namespace parex
