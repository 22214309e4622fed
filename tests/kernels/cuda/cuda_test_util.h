// Shared by the parex_kernels_cuda tests: host arrays, naive host
// references for elementwise, reduction and matmul ops, and the broadcast
// cases both the launch-plan and the device tests run.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "graph/ir/program.h"
#include "kernels/allocator.h"
#include "kernels/cuda/cuda_device_context.h"
#include "kernels/cuda/cuda_info.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_launchers.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/kernel_plans.h"
#include "kernels/kernel_context.h"
#include "kernels/kernel_registry.h"
#include "kernels/op_runner.h"
#include "kernels/scope.h"
#include "kernels/tensor.h"
#include "kernels/visible_devices.h"

namespace parex::cuda_test {

using ::testing::HasSubstr;

// ---------------------------------------------------------------------------
// Host arrays and naive references.

// Values held as double; for fp32 tests they are fp32-representable, so the
// reference sees exactly what the device sees.
struct Array {
  Dims dims;
  std::vector<double> values;
};

template <typename T>
Array RandomArray(const Dims& dims, double lo, double hi, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Array a{dims, std::vector<double>(static_cast<size_t>(Numel(dims)))};
  for (double& v : a.values) v = static_cast<double>(static_cast<T>(dist(gen)));
  return a;
}

// Values in [lo, hi] with a random sign (divisors away from zero).
template <typename T>
Array RandomSignedArray(const Dims& dims, double lo, double hi, uint32_t seed) {
  Array a = RandomArray<T>(dims, lo, hi, seed);
  std::mt19937 gen(seed + 1000);
  for (double& v : a.values) {
    if (gen() % 2) v = -v;
  }
  return a;
}

inline std::vector<int64_t> RowMajorStrides(const Dims& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) {
    strides[d] = strides[d + 1] * dims[d + 1];
  }
  return strides;
}

// Calls f(index) for every multi-index of `dims`, row-major.
inline void ForEachIndex(
    const Dims& dims,
    const std::function<void(const std::vector<int64_t>&)>& f) {
  if (Numel(dims) == 0) return;
  std::vector<int64_t> index(dims.size(), 0);
  while (true) {
    f(index);
    int d = static_cast<int>(dims.size()) - 1;
    while (d >= 0 && ++index[d] == dims[d]) index[d--] = 0;
    if (d < 0) return;
  }
}

// The elementwise ops' broadcasting written out index by index. At axis -1
// (and for equal dims) numpy's rule: the dims line up at the end, the operand
// of lower rank (either one) gets leading 1s, extents of 1 repeat and Out
// takes the larger. At an explicit axis Fluid's: Y, less its trailing 1s,
// covers X's dims [axis, axis + its rank) and Out has X's dims. Assumes the
// shapes broadcast.
inline Array RefElementwise(const Array& x, const Array& y, int axis,
                            const std::function<double(double, double)>& f) {
  const bool numpy = axis == -1 || x.dims == y.dims;
  const int rank =
      numpy ? static_cast<int>(std::max(x.dims.size(), y.dims.size()))
            : static_cast<int>(x.dims.size());
  Dims xd(rank, 1), yd(rank, 1);
  if (numpy) {
    std::copy(x.dims.begin(), x.dims.end(), xd.end() - x.dims.size());
    std::copy(y.dims.begin(), y.dims.end(), yd.end() - y.dims.size());
  } else {
    xd = x.dims;
    Dims small = y.dims;
    while (!small.empty() && small.back() == 1) small.pop_back();
    std::copy(small.begin(), small.end(), yd.begin() + axis);
  }
  Dims out_dims(rank);
  for (int i = 0; i < rank; ++i) out_dims[i] = xd[i] == 1 ? yd[i] : xd[i];
  const auto xs = RowMajorStrides(xd), ys = RowMajorStrides(yd);
  Array out{out_dims, {}};
  ForEachIndex(out_dims, [&](const std::vector<int64_t>& idx) {
    int64_t xo = 0, yo = 0;
    for (int d = 0; d < rank; ++d) {
      xo += (xd[d] == 1 ? 0 : idx[d]) * xs[d];
      yo += (yd[d] == 1 ? 0 : idx[d]) * ys[d];
    }
    out.values.push_back(f(x.values[xo], y.values[yo]));
  });
  return out;
}

// Sum (or mean) over the dims flagged in `reduced`.
inline Array RefReduce(const Array& x, const std::vector<bool>& reduced,
                       bool mean) {
  Dims out_dims;
  for (size_t d = 0; d < x.dims.size(); ++d) {
    out_dims.push_back(reduced[d] ? 1 : x.dims[d]);
  }
  const auto os = RowMajorStrides(out_dims);
  Array out{out_dims, std::vector<double>(Numel(out_dims), 0.0)};
  std::vector<int64_t> counts(out.values.size(), 0);
  size_t i = 0;
  ForEachIndex(x.dims, [&](const std::vector<int64_t>& idx) {
    int64_t o = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      o += (reduced[d] ? 0 : idx[d]) * os[d];
    out.values[o] += x.values[i++];
    ++counts[o];
  });
  if (mean) {
    for (size_t j = 0; j < out.values.size(); ++j) out.values[j] /= counts[j];
  }
  return out;
}

// C[m,n] = alpha * op(A) op(B) for row-major A [rows_a, cols_a] etc.
inline std::vector<double> RefGemm(const double* a, int64_t rows_a,
                                   int64_t cols_a, bool trans_a,
                                   const double* b, int64_t rows_b,
                                   int64_t cols_b, bool trans_b, double alpha) {
  const int64_t m = trans_a ? cols_a : rows_a;
  const int64_t k = trans_a ? rows_a : cols_a;
  const int64_t n = trans_b ? rows_b : cols_b;
  std::vector<double> c(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double av = trans_a ? a[p * cols_a + i] : a[i * cols_a + p];
        const double bv = trans_b ? b[j * cols_b + p] : b[p * cols_b + j];
        s += av * bv;
      }
      c[i * n + j] = alpha * s;
    }
  }
  return c;
}

// numpy matmul of X [..., r, c] and Y [..., r, c] (rank >= 2 each, batch
// dims broadcast), with transposes; `out_dims` as numpy gives them.
inline Array RefBatchedMatmul(const Array& x, const Array& y, bool trans_x,
                              bool trans_y, double alpha) {
  const size_t xr = x.dims.size(), yr = y.dims.size();
  const int64_t rx = x.dims[xr - 2], cx = x.dims[xr - 1];
  const int64_t ry = y.dims[yr - 2], cy = y.dims[yr - 1];
  const Dims xb(x.dims.begin(), x.dims.end() - 2);
  const Dims yb(y.dims.begin(), y.dims.end() - 2);
  const size_t rank = std::max(xb.size(), yb.size());
  Dims xa(rank, 1), ya(rank, 1), ob(rank);
  std::copy(xb.begin(), xb.end(), xa.end() - xb.size());
  std::copy(yb.begin(), yb.end(), ya.end() - yb.size());
  for (size_t d = 0; d < rank; ++d) ob[d] = std::max(xa[d], ya[d]);
  const auto xs = RowMajorStrides(xa), ys = RowMajorStrides(ya);
  Array out{ob, {}};
  const int64_t m = trans_x ? cx : rx, n = trans_y ? ry : cy;
  out.dims.push_back(m);
  out.dims.push_back(n);
  ForEachIndex(ob, [&](const std::vector<int64_t>& idx) {
    int64_t xi = 0, yi = 0;
    for (size_t d = 0; d < rank; ++d) {
      xi += (xa[d] == 1 ? 0 : idx[d]) * xs[d];
      yi += (ya[d] == 1 ? 0 : idx[d]) * ys[d];
    }
    auto c = RefGemm(x.values.data() + xi * rx * cx, rx, cx, trans_x,
                     y.values.data() + yi * ry * cy, ry, cy, trans_y, alpha);
    out.values.insert(out.values.end(), c.begin(), c.end());
  });
  return out;
}

inline ::testing::AssertionResult ValuesNear(
    const std::vector<double>& actual, const std::vector<double>& expected,
    double atol, double rtol) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure()
           << actual.size() << " values, expected " << expected.size();
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = actual[i], e = expected[i];
    const bool both_nan = std::isnan(a) && std::isnan(e);
    if (!both_nan && !(std::abs(a - e) <= atol + rtol * std::abs(e))) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a << " vs expected " << e;
    }
  }
  return ::testing::AssertionSuccess();
}

struct BroadcastCase {
  Dims x, y;
  int axis;
  ElementwisePlan::Kind kind;
  Dims out;
};

// The broadcast cases of both the plan test and the device test: Fluid's
// rule at an explicit axis, numpy's at -1 (Paddle 2.x's both-way cases).
inline const std::vector<BroadcastCase>& BroadcastCases() {
  using K = ElementwisePlan::Kind;
  static const std::vector<BroadcastCase> cases = {
      {{3, 4}, {3, 4}, -1, K::kSameShape, {3, 4}},
      {{2, 3, 4}, {4}, -1, K::kMid, {2, 3, 4}},
      {{2, 3, 4}, {3}, 1, K::kMid, {2, 3, 4}},
      {{2, 3, 4}, {3, 4}, 1, K::kMid, {2, 3, 4}},
      {{2, 3, 4}, {2}, 0, K::kMid, {2, 3, 4}},
      {{2, 3, 4}, {3, 1}, 1, K::kMid, {2, 3, 4}},  // trailing 1 dropped
      {{2, 3}, {1}, -1, K::kMid, {2, 3}},          // one element
      {{2, 3, 4}, {1, 3, 1}, -1, K::kMid, {2, 3, 4}},
      {{2, 3, 4}, {2, 1, 4}, -1, K::kGeneral, {2, 3, 4}},
      // numpy's rule at axis -1: X broadcasts too.
      {{3, 1}, {1, 4}, -1, K::kGeneral, {3, 4}},  // both broadcast
      {{4}, {2, 3, 4}, -1, K::kMid, {2, 3, 4}},   // X is the small one
      {{2, 1, 4}, {3, 1}, -1, K::kGeneral, {2, 3, 4}},
      {{1}, {2, 3}, -1, K::kMid, {2, 3}},  // X one element
      {{2, 3, 4}, {2, 3, 1}, -1, K::kMid, {2, 3, 4}},
      {{5, 1, 3, 1, 2}, {1, 4, 1, 6, 1}, -1, K::kGeneral, {5, 4, 3, 6, 2}},
  };
  return cases;
}

struct ReduceCase {
  Dims x;
  std::vector<int> dims;
  bool keep_dim;
  bool reduce_all;
  Dims out;
};

inline const std::vector<ReduceCase>& ReduceCases() {
  static const std::vector<ReduceCase> cases = {
      {{2, 3, 4, 5}, {1}, false, false, {2, 4, 5}},
      {{2, 3, 4, 5}, {-1}, true, false, {2, 3, 4, 1}},
      {{2, 3, 4, 5}, {0, 2}, false, false, {3, 5}},  // two runs
      {{2, 3, 4, 5}, {1, 2}, true, false, {2, 1, 1, 5}},
      {{2, 3, 4, 5}, {0, 3}, false, false, {3, 4}},
      {{2, 3, 4, 5}, {1}, false, true, {1}},   // reduce_all wins
      {{2, 1, 4}, {0, 2}, false, false, {1}},  // 1s dropped
      {{4, 300}, {1}, false, false, {4}},      // long rows
      {{300, 3}, {0}, false, false, {3}},      // columns
      {{7}, {0}, true, false, {1}},
      {{2, 3, 2, 3, 2}, {0, 2, 4}, false, false, {3, 3}},
  };
  return cases;
}

inline std::vector<bool> ReducedFlags(const ReduceCase& c) {
  const int rank = static_cast<int>(c.x.size());
  std::vector<bool> flags(rank, c.reduce_all || c.dims.empty());
  for (int d : c.dims) flags[d < 0 ? d + rank : d] = true;
  return flags;
}

struct MatmulCase {
  Dims x, y;
  bool trans_x, trans_y;
  Dims out;
  bool strided;
};

// The context of cuda:0 for the device tests, with the CUDA kernels in the
// global registry. REQUIRES: a device is visible.
inline CudaDeviceContext* Cuda0() {
  static CudaDeviceContext* context = [] {
    RegisterCudaKernels(&KernelRegistry::Global());
    auto created = CudaDeviceContext::Create(Place::CUDA(0));
    PAREX_CHECK(created.ok(), created.status().ToString());
    return std::move(created).value().release();  // lives until exit
  }();
  return context;
}

}  // namespace parex::cuda_test
