// The transformer ops' CUDA kernels (reshape2, transpose2, matmul_v2_grad,
// reduce_{sum,mean}_grad, gelu, layer_norm, lookup_table_v2 and their
// gradients) against the CPU kernels on random shapes (KernelPair): every
// output compared, XShape included. Matmul gradients cover batched, shared
// (one operand without batch dims), both-way broadcast batch dims,
// transposed and vector operands; reductions keep_dim, reduce_all and
// negative dims; gelu both forms; layer_norm with and without Scale / Bias;
// lookups with int64 and int32 ids and padding_idx (ids repeat, so gradient
// rows sum).
//
// Tolerance: rel 1e-5 (fp32) / 1e-12 (fp64) and abs kAbsPerTerm * terms, as
// in cnn_vs_cpu_test.cc (`terms`: the longest sum behind one output). The
// cases run with two CPU contexts first; the CUDA comparison skips without a
// GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_info.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/kernel_pair.h"

namespace parex {
namespace {

using namespace cuda_test;  // NOLINT: test helpers

struct TfmCase {
  std::string name;
  std::string type;
  int64_t terms;
  std::function<void(KernelPair&)> setup;
};

template <typename T>
struct TfmTolerance;
template <>
struct TfmTolerance<float> {
  static constexpr double kRel = 1e-5, kAbsPerTerm = 2e-7;
};
template <>
struct TfmTolerance<double> {
  static constexpr double kRel = 1e-12, kAbsPerTerm = 4e-16;
};

int64_t Draw(std::mt19937& gen, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(gen() % static_cast<uint32_t>(hi - lo + 1));
}

Dims RandomDims(std::mt19937& gen, int rank, int64_t lo, int64_t hi) {
  Dims d(rank);
  for (int64_t& e : d) e = Draw(gen, lo, hi);
  return d;
}

Tensor Empty(Dims dims) {  // XShape: [0] + X's dims
  dims.insert(dims.begin(), 0);
  return Tensor(DType::kFP32, dims);
}

template <typename T>
void ShapeCases(std::mt19937& gen, std::vector<TfmCase>* cases) {
  const Dims x = RandomDims(gen, 3, 1, 6);
  const std::vector<int> shape = {static_cast<int>(x[0] * x[1]), -1};
  const uint32_t seed = gen();
  cases->push_back({"reshape2", "reshape2", 1, [=](KernelPair& p) {
                      p.Input("X", RandomHost<T>(x, -1, 1, seed))
                          .Attr("shape", shape)
                          .Output("Out")
                          .Output("XShape");
                    }});
  cases->push_back(
      {"reshape2_grad", "reshape2_grad", 1, [=](KernelPair& p) {
         p.Input("XShape", Empty(x))
             .Input("Out@GRAD", RandomHost<T>({x[0] * x[1], x[2]}, -1, 1, seed))
             .Output("X@GRAD");
       }});
  for (int rank : {2, 3, 4}) {
    const Dims in = RandomDims(gen, rank, 1, 5);
    std::vector<int> axis(rank);
    std::iota(axis.begin(), axis.end(), 0);
    std::shuffle(axis.begin(), axis.end(), gen);
    Dims out(rank);
    for (int d = 0; d < rank; ++d) out[d] = in[axis[d]];
    const std::string r = std::to_string(rank);
    cases->push_back(
        {"transpose2_rank" + r, "transpose2", 1, [=](KernelPair& p) {
           p.Input("X", RandomHost<T>(in, -1, 1, seed + rank))
               .Attr("axis", axis)
               .Output("Out")
               .Output("XShape");
         }});
    cases->push_back(
        {"transpose2_grad_rank" + r, "transpose2_grad", 1, [=](KernelPair& p) {
           p.Input("XShape", Empty(in))
               .Input("Out@GRAD", RandomHost<T>(out, -1, 1, seed + rank))
               .Attr("axis", axis)
               .Output("X@GRAD");
         }});
  }
}

// matmul_v2_grad of X `x` and Y `y` (Out@GRAD of the product's dims).
template <typename T>
void MatmulGradCase(const std::string& name, const Dims& x, const Dims& y,
                    bool tx, bool ty, const Dims& out, uint32_t seed,
                    std::vector<TfmCase>* cases) {
  const int64_t terms = 8 * std::max<int64_t>(Numel(out), 1);
  cases->push_back(
      {"matmul_v2_grad_" + name, "matmul_v2_grad", terms, [=](KernelPair& p) {
         p.Input("X", RandomHost<T>(x, -1, 1, seed))
             .Input("Y", RandomHost<T>(y, -1, 1, seed + 1))
             .Input("Out@GRAD", RandomHost<T>(out, -1, 1, seed + 2))
             .Attr("trans_x", tx)
             .Attr("trans_y", ty)
             .Output("X@GRAD")
             .Output("Y@GRAD");
       }});
}

template <typename T>
void MatmulGradCases(std::mt19937& gen, std::vector<TfmCase>* cases) {
  const int64_t b = Draw(gen, 2, 3), c = Draw(gen, 2, 3), m = Draw(gen, 1, 5),
                k = Draw(gen, 1, 5), n = Draw(gen, 1, 5);
  const uint32_t s = gen();
  for (bool tx : {false, true}) {
    for (bool ty : {false, true}) {
      const std::string t = std::string(tx ? "tx" : "nx") + (ty ? "ty" : "ny");
      const Dims xm = tx ? Dims{k, m} : Dims{m, k};
      const Dims ym = ty ? Dims{n, k} : Dims{k, n};
      auto batched = [](Dims pre, const Dims& mat) {
        pre.insert(pre.end(), mat.begin(), mat.end());
        return pre;
      };
      MatmulGradCase<T>("plain_" + t, xm, ym, tx, ty, {m, n}, s, cases);
      MatmulGradCase<T>("batched_" + t, batched({b, c}, xm),
                        batched({b, c}, ym), tx, ty, {b, c, m, n}, s, cases);
      MatmulGradCase<T>("shared_y_" + t, batched({b, c}, xm), ym, tx, ty,
                        {b, c, m, n}, s, cases);
      MatmulGradCase<T>("shared_x_" + t, xm, batched({b}, ym), tx, ty,
                        {b, m, n}, s, cases);
      MatmulGradCase<T>("both_ways_" + t, batched({b, 1}, xm),
                        batched({1, c}, ym), tx, ty, {b, c, m, n}, s, cases);
    }
  }
  MatmulGradCase<T>("vector_x", {k}, {b, k, n}, false, false, {b, n}, s, cases);
  MatmulGradCase<T>("vector_y", {b, m, k}, {k}, false, true, {b, m}, s, cases);
  MatmulGradCase<T>("vectors", {k}, {k}, false, false, {1}, s, cases);
}

template <typename T>
void ReduceGradCases(std::mt19937& gen, std::vector<TfmCase>* cases) {
  const Dims x = RandomDims(gen, 4, 1, 4);
  const uint32_t s = gen();
  struct R {
    std::string name;
    std::vector<int> dim;
    bool keep_dim, all;
  };
  for (const R& r :
       {R{"last", {-1}, false, false}, R{"middle_keep", {1, 2}, true, false},
        R{"outer", {0}, false, false}, R{"all", {0}, false, true}}) {
    Dims out;
    for (int d = 0; d < 4; ++d) {
      const bool reduced = r.all ||
                           std::count(r.dim.begin(), r.dim.end(), d) > 0 ||
                           std::count(r.dim.begin(), r.dim.end(), d - 4) > 0;
      if (!reduced) out.push_back(x[d]);
      if (reduced && r.keep_dim) out.push_back(1);
    }
    if (out.empty()) out = {1};
    for (const char* type : {"reduce_sum_grad", "reduce_mean_grad"}) {
      cases->push_back(
          {std::string(type) + "_" + r.name, type, 1, [=](KernelPair& p) {
             p.Input("X", RandomHost<T>(x, -1, 1, s))
                 .Input("Out@GRAD", RandomHost<T>(out, -1, 1, s))
                 .Attr("dim", r.dim)
                 .Attr("keep_dim", r.keep_dim)
                 .Attr("reduce_all", r.all)
                 .Output("X@GRAD");
           }});
    }
  }
}

template <typename T>
void GeluAndLayerNormCases(std::mt19937& gen, std::vector<TfmCase>* cases) {
  const Dims x = RandomDims(gen, 3, 1, 7);
  const uint32_t s = gen();
  for (bool approximate : {false, true}) {
    const std::string form = approximate ? "_tanh" : "_erf";
    cases->push_back({"gelu" + form, "gelu", 1, [=](KernelPair& p) {
                        p.Input("X", RandomHost<T>(x, -4, 4, s))
                            .Attr("approximate", approximate)
                            .Output("Out");
                      }});
    cases->push_back({"gelu_grad" + form, "gelu_grad", 1, [=](KernelPair& p) {
                        p.Input("X", RandomHost<T>(x, -4, 4, s))
                            .Input("Out@GRAD", RandomHost<T>(x, -1, 1, s + 1))
                            .Attr("approximate", approximate)
                            .Output("X@GRAD");
                      }});
  }
  for (int axis : {1, 2}) {
    for (bool affine : {true, false}) {
      int64_t left = 1, right = 1;
      for (int d = 0; d < 3; ++d) (d < axis ? left : right) *= x[d];
      const std::string name =
          "_axis" + std::to_string(axis) + (affine ? "_affine" : "_plain");
      const int64_t terms = 4 * (left + right);
      auto inputs = [=](KernelPair& p) {
        p.Input("X", RandomHost<T>(x, -2, 2, s));
        if (affine) {
          p.Input("Scale", RandomHost<T>({right}, 0.5, 1.5, s + 1))
              .Input("Bias", RandomHost<T>({right}, -1, 1, s + 2));
        }
        p.Attr("begin_norm_axis", axis).Attr("epsilon", 1e-5f);
      };
      cases->push_back(
          {"layer_norm" + name, "layer_norm", terms, [=](KernelPair& p) {
             inputs(p);
             p.Output("Y").Output("Mean").Output("Variance");
           }});
      cases->push_back(
          {"layer_norm_grad" + name, "layer_norm_grad", terms,
           [=](KernelPair& p) {
             inputs(p);
             p.Input("Mean", RandomHost<T>({left}, -0.5, 0.5, s + 3))
                 .Input("Variance", RandomHost<T>({left}, 0.2, 2, s + 4))
                 .Input("Y@GRAD", RandomHost<T>(x, -1, 1, s + 5))
                 .Output("X@GRAD");
             if (affine) p.Output("Scale@GRAD").Output("Bias@GRAD");
           }});
    }
  }
}

template <typename T>
void LookupCases(std::mt19937& gen, std::vector<TfmCase>* cases) {
  const int64_t rows = Draw(gen, 3, 9), width = Draw(gen, 1, 6);
  const Dims ids = RandomDims(gen, 2, 1, 5);
  const uint32_t s = gen();
  for (bool int32 : {false, true}) {
    for (int64_t padding : {int64_t{-1}, int64_t{1}}) {
      const std::string name = std::string(int32 ? "_int32" : "_int64") +
                               (padding < 0 ? "" : "_padding");
      auto inputs = [=](KernelPair& p) {
        p.Input("W", RandomHost<T>({rows, width}, -1, 1, s));
        if (int32) {
          p.Input("Ids", RandomLabels<int32_t>(ids, rows, s + 1));
        } else {
          p.Input("Ids", RandomLabels<int64_t>(ids, rows, s + 1));
        }
        p.Attr<int64_t>("padding_idx", padding);
      };
      Dims out = ids;
      out.push_back(width);
      cases->push_back(
          {"lookup_table_v2" + name, "lookup_table_v2", 1, [=](KernelPair& p) {
             inputs(p);
             p.Output("Out");
           }});
      cases->push_back({"lookup_table_v2_grad" + name, "lookup_table_v2_grad",
                        Numel(ids), [=](KernelPair& p) {
                          inputs(p);
                          p.Input("Out@GRAD", RandomHost<T>(out, -1, 1, s + 2))
                              .Attr("is_sparse", false)
                              .Output("W@GRAD");
                        }});
    }
  }
}

template <typename T>
std::vector<TfmCase> TfmOpCases(uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<TfmCase> cases;
  ShapeCases<T>(gen, &cases);
  MatmulGradCases<T>(gen, &cases);
  ReduceGradCases<T>(gen, &cases);
  GeluAndLayerNormCases<T>(gen, &cases);
  LookupCases<T>(gen, &cases);
  return cases;
}

template <typename T>
class TransformerCudaVsCpuTest : public ::testing::Test {
 protected:
  void RunCases(DeviceContext* tested) {
    CpuDeviceContext cpu(Place::CPU(0));
    for (uint32_t seed : {21u, 22u, 23u}) {
      for (const TfmCase& c : TfmOpCases<T>(seed)) {
        SCOPED_TRACE(c.name + " seed " + std::to_string(seed));
        KernelPair pair(c.type);
        c.setup(pair);
        ASSERT_GT(pair.num_outputs(), 0u);
        pair.ExpectSame(&cpu, tested, TfmTolerance<T>::kRel,
                        TfmTolerance<T>::kAbsPerTerm * c.terms);
      }
    }
  }
};

using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(TransformerCudaVsCpuTest, FloatTypes);

TYPED_TEST(TransformerCudaVsCpuTest, HarnessAgreesWithItselfOnTwoCpuContexts) {
  CpuDeviceContext other(Place::CPU(0));
  this->RunCases(&other);
}

TYPED_TEST(TransformerCudaVsCpuTest, CasesCoverEveryOp) {
  std::set<std::string> types;
  for (const TfmCase& c : TfmOpCases<TypeParam>(21)) types.insert(c.type);
  for (const char* type :
       {"reshape2", "reshape2_grad", "transpose2", "transpose2_grad",
        "matmul_v2_grad", "reduce_sum_grad", "reduce_mean_grad", "gelu",
        "gelu_grad", "layer_norm", "layer_norm_grad", "lookup_table_v2",
        "lookup_table_v2_grad"}) {
    EXPECT_EQ(types.count(type), 1u) << type;
  }
}

TYPED_TEST(TransformerCudaVsCpuTest, TransformerOpsMatchTheCpuKernels) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  this->RunCases(Cuda0());
}

}  // namespace
}  // namespace parex
