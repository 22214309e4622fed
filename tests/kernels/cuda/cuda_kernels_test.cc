// Tests of parex_kernels_cuda.
//
// Device-free tests (they run on every machine): the error macros, NCCL
// linkage, device discovery without a driver, kernel registration, and the
// launch plans of kernel_plans.h, whose index arithmetic is replayed on the
// host against naive references.
//
// Device tests skip when no CUDA device is visible. They run each op through
// parex::RunOp on a Scope whose inputs live on cuda:0, copy the result back
// and compare with a naive host reference, in fp32 and fp64; plus stream and
// event ordering and the CUDA allocator's statistics.
#include "kernels/cuda/cuda_kernels.h"

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

#include "graph/program.h"
#include "kernels/allocator.h"
#include "kernels/cuda/cuda_device_context.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_launchers.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/kernel_plans.h"
#include "kernels/kernel_context.h"
#include "kernels/op_runner.h"
#include "kernels/scope.h"
#include "kernels/tensor.h"

namespace parex {
namespace {

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

std::vector<int64_t> RowMajorStrides(const Dims& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) {
    strides[d] = strides[d + 1] * dims[d + 1];
  }
  return strides;
}

// Calls f(index) for every multi-index of `dims`, row-major.
void ForEachIndex(const Dims& dims,
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

// Fluid elementwise with `axis`, written out index by index: the operand of
// lower rank (Y on ties) covers the dims [axis, axis + its rank) of the
// other after dropping its trailing 1s; extents of 1 broadcast.
Array RefElementwise(const Array& x, const Array& y, int axis,
                     const std::function<double(double, double)>& f) {
  const bool y_small = x.dims.size() >= y.dims.size();
  const Dims& big = y_small ? x.dims : y.dims;
  Dims small = y_small ? y.dims : x.dims;
  const int rank = static_cast<int>(big.size());
  int start =
      axis < 0 ? rank - static_cast<int>(small.size()) + axis + 1 : axis;
  while (!small.empty() && small.back() == 1 &&
         start + static_cast<int>(small.size()) > rank) {
    small.pop_back();
  }
  Dims padded(rank, 1);
  for (size_t i = 0; i < small.size(); ++i) padded[start + i] = small[i];
  const Dims xd = y_small ? big : padded;
  const Dims yd = y_small ? padded : big;
  Dims out_dims(rank);
  for (int i = 0; i < rank; ++i) out_dims[i] = std::max(xd[i], yd[i]);
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
Array RefReduce(const Array& x, const std::vector<bool>& reduced, bool mean) {
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
std::vector<double> RefGemm(const double* a, int64_t rows_a, int64_t cols_a,
                            bool trans_a, const double* b, int64_t rows_b,
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
Array RefBatchedMatmul(const Array& x, const Array& y, bool trans_x,
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

::testing::AssertionResult ValuesNear(const std::vector<double>& actual,
                                      const std::vector<double>& expected,
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

// ---------------------------------------------------------------------------
// Tests that need no device.

Status FailingCudaCall() {
  PAREX_CUDA_RETURN_IF_ERROR(cudaErrorInvalidValue);
  return Status::Ok();
}
Status FailingCublasCall() {
  PAREX_CUBLAS_RETURN_IF_ERROR(CUBLAS_STATUS_NOT_INITIALIZED);
  return Status::Ok();
}
Status FailingNcclCall() {
  PAREX_NCCL_RETURN_IF_ERROR(ncclInvalidArgument);
  return Status::Ok();
}
StatusOr<int> SucceedingCalls() {
  PAREX_CUDA_RETURN_IF_ERROR(cudaSuccess);
  PAREX_CUBLAS_RETURN_IF_ERROR(CUBLAS_STATUS_SUCCESS);
  PAREX_NCCL_RETURN_IF_ERROR(ncclSuccess);
  return 42;
}

TEST(CudaStatusTest, MacrosKeepExpressionAndLibraryMessage) {
  Status cuda = FailingCudaCall();
  EXPECT_EQ(cuda.code(), StatusCode::kInternal);
  EXPECT_THAT(cuda.message(), HasSubstr("cudaErrorInvalidValue"));
  EXPECT_THAT(cuda.message(),
              HasSubstr(cudaGetErrorString(cudaErrorInvalidValue)));
  EXPECT_THAT(cuda.message(), HasSubstr("'cudaErrorInvalidValue'"));
  EXPECT_THAT(cuda.message(), HasSubstr("cuda_kernels_test.cc:"));

  Status cublas = FailingCublasCall();
  EXPECT_EQ(cublas.code(), StatusCode::kInternal);
  EXPECT_THAT(cublas.message(), HasSubstr("CUBLAS_STATUS_NOT_INITIALIZED"));
  EXPECT_THAT(cublas.message(),
              HasSubstr(cublasGetStatusString(CUBLAS_STATUS_NOT_INITIALIZED)));

  Status nccl = FailingNcclCall();
  EXPECT_EQ(nccl.code(), StatusCode::kInternal);
  EXPECT_THAT(nccl.message(), HasSubstr("NCCL error"));
  EXPECT_THAT(nccl.message(),
              HasSubstr(ncclGetErrorString(ncclInvalidArgument)));
  EXPECT_THAT(nccl.message(), HasSubstr("'ncclInvalidArgument'"));

  StatusOr<int> ok = SucceedingCalls();
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, 42);
}

TEST(CudaStatusTest, NoDeviceIsAFailedPrecondition) {
  Status s = CudaErrorStatus(cudaErrorNoDevice, "cudaSetDevice(0)", "x.cc", 1);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("'cudaSetDevice(0)' at x.cc:1"));
}

TEST(CudaInfoTest, NcclIsLinked) {
  const std::string version = NcclVersionString();
  EXPECT_EQ(version.rfind("2.", 0), 0u) << version;
  EXPECT_EQ(std::count(version.begin(), version.end(), '.'), 2) << version;
}

TEST(CudaInfoTest, DeviceCountNeverFails) {
  const int count = CudaDeviceCount();
  EXPECT_GE(count, 0);
  EXPECT_EQ(CudaDeviceCount(), count);  // and asking again is harmless
}

TEST(CudaDeviceContextTest, CreationWithoutDeviceIsAnErrorNamingThePlace) {
  const int count = CudaDeviceCount();
  auto context = CudaDeviceContext::Create(Place::CUDA(0));
  if (count == 0) {
    ASSERT_FALSE(context.ok());
    EXPECT_EQ(context.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(context.status().message(), HasSubstr("cuda:0"));
  } else {
    EXPECT_TRUE(context.ok()) << context.status().ToString();
  }
  auto missing = CudaDeviceContext::Create(Place::CUDA(count));
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(),
              HasSubstr("cuda:" + std::to_string(count)));
  auto negative = CudaDeviceContext::Create(Place::CUDA(-1));
  EXPECT_FALSE(negative.ok());
}

TEST(CudaDeviceContextTest, CpuPlaceIsRejected) {
  auto context = CudaDeviceContext::Create(Place::CPU());
  ASSERT_FALSE(context.ok());
  EXPECT_EQ(context.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(context.status().message(), HasSubstr("cpu:0"));
}

TEST(CudaEventTest, UnrecordedEventIsComplete) {
  CudaEvent event;
  EXPECT_TRUE(event.Query());
  EXPECT_TRUE(event.Synchronize().ok());
  EXPECT_EQ(event.get(), nullptr);
}

const char* const kCudaOps[] = {"elementwise_add",
                                "elementwise_sub",
                                "elementwise_mul",
                                "elementwise_div",
                                "relu",
                                "sigmoid",
                                "tanh",
                                "scale",
                                "reduce_sum",
                                "reduce_mean",
                                "mean",
                                "sum",
                                "mul",
                                "matmul",
                                "matmul_v2"};

TEST(CudaKernelsTest, RegistersEveryOpForFp32AndFp64OnCudaOnly) {
  KernelRegistry registry;
  RegisterCudaKernels(&registry);
  RegisterCudaKernels(&registry);  // a second call changes nothing
  for (const char* op : kCudaOps) {
    for (DType dtype : {DType::kFP32, DType::kFP64}) {
      EXPECT_TRUE(registry.Has({op, Place::Kind::kCUDA, dtype}))
          << op << " " << DTypeName(dtype);
      EXPECT_FALSE(registry.Has({op, Place::Kind::kCPU, dtype})) << op;
    }
  }
  EXPECT_EQ(registry.Keys().size(), 2 * std::size(kCudaOps));
}

TEST(CudaKernelsTest, KernelOnACpuContextIsAnErrorNotACrash) {
  KernelRegistry registry;
  RegisterCudaKernels(&registry);
  auto relu = registry.Find({"relu", Place::Kind::kCUDA, DType::kFP32});
  ASSERT_TRUE(relu.ok());
  Program program;
  Block& block = program.global_block();
  OpDesc* op = block.AppendOp("relu");
  op->SetInput("X", {"x"});
  op->SetOutput("Out", {"out"});
  Scope scope;
  *scope.Var("x")->GetMutableTensor() = MakeTensor<float>({2}, {-1.0f, 1.0f});
  CpuDeviceContext cpu;
  KernelContext ctx(*op, &cpu);
  ASSERT_TRUE(BindVariables(*op, &scope, &ctx).ok());
  Status status = (*relu)(ctx);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("CudaDeviceContext"));
  EXPECT_THAT(status.message(), HasSubstr("relu"));
}

// ---- Launch plans, replayed on the host ----

// Computes out from a plan the way elementwise_launchers.cu indexes.
std::vector<double> ReplayElementwise(
    const ElementwisePlan& plan, const Array& x, const Array& y,
    const std::function<double(double, double)>& f) {
  std::vector<double> out(plan.numel);
  for (int64_t i = 0; i < plan.numel; ++i) {
    switch (plan.kind) {
      case ElementwisePlan::Kind::kSameShape:
        out[i] = f(x.values[i], y.values[i]);
        break;
      case ElementwisePlan::Kind::kMid: {
        const int64_t mid = (i / plan.post) % plan.n;
        out[i] = plan.broadcast_y ? f(x.values[i], y.values[mid])
                                  : f(x.values[mid], y.values[i]);
        break;
      }
      case ElementwisePlan::Kind::kGeneral: {
        int64_t rest = i, xo = 0, yo = 0;
        for (int d = plan.shape.rank - 1; d >= 0; --d) {
          const int64_t index = rest % plan.shape.extents[d];
          rest /= plan.shape.extents[d];
          xo += index * plan.shape.x_strides[d];
          yo += index * plan.shape.y_strides[d];
        }
        out[i] = f(x.values[xo], y.values[yo]);
        break;
      }
    }
  }
  return out;
}

struct BroadcastCase {
  Dims x, y;
  int axis;
  ElementwisePlan::Kind kind;
  Dims out;
};

// The broadcast cases of both the plan test and the device test.
const std::vector<BroadcastCase>& BroadcastCases() {
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
      {{3, 1}, {1, 4}, -1, K::kGeneral, {3, 4}},  // both broadcast
      {{4}, {2, 3, 4}, -1, K::kMid, {2, 3, 4}},   // X is the small one
      {{2, 3, 4}, {2, 3, 1}, -1, K::kMid, {2, 3, 4}},
      {{5, 1, 3, 1, 2}, {1, 4, 1, 6, 1}, -1, K::kGeneral, {5, 4, 3, 6, 2}},
  };
  return cases;
}

TEST(KernelPlansTest, ElementwiseFollowsFluidAxisBroadcasting) {
  const auto sub = [](double a, double b) { return a - b; };
  uint32_t seed = 1;
  for (const BroadcastCase& c : BroadcastCases()) {
    SCOPED_TRACE(DimsToString(c.x) + " - " + DimsToString(c.y) + " axis " +
                 std::to_string(c.axis));
    auto plan = PlanElementwise(c.x, c.y, c.axis);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->kind, c.kind);
    EXPECT_EQ(plan->out_dims, c.out);
    const Array x = RandomArray<double>(c.x, -1, 1, seed++);
    const Array y = RandomArray<double>(c.y, -1, 1, seed++);
    const Array expected = RefElementwise(x, y, c.axis, sub);
    EXPECT_EQ(expected.dims, c.out);
    EXPECT_TRUE(
        ValuesNear(ReplayElementwise(*plan, x, y, sub), expected.values, 0, 0));
  }
}

TEST(KernelPlansTest, ElementwiseMidDecomposition) {
  auto plan = PlanElementwise({2, 3, 4, 5}, {3, 4}, 1);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->kind, ElementwisePlan::Kind::kMid);
  EXPECT_TRUE(plan->broadcast_y);
  EXPECT_EQ(plan->pre, 2);
  EXPECT_EQ(plan->n, 12);
  EXPECT_EQ(plan->post, 5);
}

TEST(KernelPlansTest, ElementwiseRejectsMismatches) {
  EXPECT_EQ(PlanElementwise({2, 3}, {4}, -1).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanElementwise({2, 3}, {3}, 2).status().code(),
            StatusCode::kInvalidArgument);  // runs past the last dim
  EXPECT_EQ(PlanElementwise({2, 3}, {2}, 1).status().code(),
            StatusCode::kInvalidArgument);
  auto status = PlanElementwise({2, 3}, {4}, -1).status();
  EXPECT_THAT(status.message(), HasSubstr("[2,3]"));
  EXPECT_THAT(status.message(), HasSubstr("[4]"));
}

TEST(KernelPlansTest, ElementwiseEmptyTensor) {
  auto plan = PlanElementwise({0, 3}, {3}, -1);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->numel, 0);
  EXPECT_EQ(plan->out_dims, (Dims{0, 3}));
}

// Computes a reduction from a plan the way reduce_launchers.cu indexes.
std::vector<double> ReplayReduce(const ReducePlan& plan, const Array& x,
                                 bool mean) {
  std::vector<double> out;
  auto finish = [&](double s, int64_t count) { return mean ? s / count : s; };
  if (plan.kind == ReducePlan::Kind::kMiddle) {
    for (int64_t j = 0; j < plan.outer * plan.inner; ++j) {
      const int64_t o = j / plan.inner, i = j % plan.inner;
      double s = 0;
      for (int64_t r = 0; r < plan.reduce; ++r) {
        s += x.values[(o * plan.reduce + r) * plan.inner + i];
      }
      out.push_back(finish(s, plan.reduce));
    }
    return out;
  }
  const ReduceShape& shape = plan.shape;
  for (int64_t j = 0; j < plan.out_numel; ++j) {
    int64_t rest = j, base = 0;
    for (int d = shape.kept_rank - 1; d >= 0; --d) {
      base += rest % shape.kept_extents[d] * shape.kept_strides[d];
      rest /= shape.kept_extents[d];
    }
    double s = 0;
    for (int64_t r = 0; r < plan.reduce_count; ++r) {
      int64_t rest_r = r, offset = base;
      for (int d = shape.reduced_rank - 1; d >= 0; --d) {
        offset += rest_r % shape.reduced_extents[d] * shape.reduced_strides[d];
        rest_r /= shape.reduced_extents[d];
      }
      s += x.values[offset];
    }
    out.push_back(finish(s, plan.reduce_count));
  }
  return out;
}

struct ReduceCase {
  Dims x;
  std::vector<int> dims;
  bool keep_dim;
  bool reduce_all;
  Dims out;
};

const std::vector<ReduceCase>& ReduceCases() {
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

std::vector<bool> ReducedFlags(const ReduceCase& c) {
  const int rank = static_cast<int>(c.x.size());
  std::vector<bool> flags(rank, c.reduce_all || c.dims.empty());
  for (int d : c.dims) flags[d < 0 ? d + rank : d] = true;
  return flags;
}

TEST(KernelPlansTest, ReduceMatchesNaiveSums) {
  uint32_t seed = 100;
  for (const ReduceCase& c : ReduceCases()) {
    SCOPED_TRACE("reduce " + DimsToString(c.x) + " keep_dim " +
                 std::to_string(c.keep_dim));
    auto plan = PlanReduce(c.x, c.dims, c.keep_dim, c.reduce_all);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->out_dims, c.out);
    EXPECT_EQ(plan->out_numel, Numel(c.out));
    const Array x = RandomArray<double>(c.x, -1, 1, seed++);
    for (bool mean : {false, true}) {
      const Array expected = RefReduce(x, ReducedFlags(c), mean);
      EXPECT_TRUE(ValuesNear(ReplayReduce(*plan, x, mean), expected.values,
                             1e-12, 1e-12));
    }
  }
}

TEST(KernelPlansTest, ReduceKinds) {
  auto middle = PlanReduce({2, 3, 4}, {1}, false, false);
  ASSERT_TRUE(middle.ok());
  EXPECT_EQ(middle->kind, ReducePlan::Kind::kMiddle);
  EXPECT_EQ(middle->outer, 2);
  EXPECT_EQ(middle->reduce, 3);
  EXPECT_EQ(middle->inner, 4);
  auto general = PlanReduce({2, 3, 4}, {0, 2}, false, false);
  ASSERT_TRUE(general.ok());
  EXPECT_EQ(general->kind, ReducePlan::Kind::kGeneral);
  EXPECT_EQ(general->reduce_count, 8);
  EXPECT_EQ(PlanReduce({2, 3}, {2}, false, false).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanReduce({2, 3}, {-3}, false, false).status().code(),
            StatusCode::kInvalidArgument);
}

// Runs a matmul plan on the host the way matmul_kernels.cc drives cuBLAS:
// the plan's leading dims, strides and batch offsets.
std::vector<double> ReplayMatmul(const MatmulPlan& plan, const Array& x,
                                 const Array& y, double alpha) {
  std::vector<double> out;
  for (int64_t b = 0; b < plan.batch; ++b) {
    int64_t xo = 0, yo = 0;
    BatchOffsets(plan, b, &xo, &yo);
    for (int64_t i = 0; i < plan.m; ++i) {
      for (int64_t j = 0; j < plan.n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < plan.k; ++p) {
          const double xv = plan.trans_x ? x.values[xo + p * plan.ldx + i]
                                         : x.values[xo + i * plan.ldx + p];
          const double yv = plan.trans_y ? y.values[yo + j * plan.ldy + p]
                                         : y.values[yo + p * plan.ldy + j];
          s += xv * yv;
        }
        out.push_back(alpha * s);
      }
    }
  }
  return out;
}

TEST(KernelPlansTest, MulFlattensByNumColDims) {
  const Array x = RandomArray<double>({2, 3, 4}, -1, 1, 1);
  const Array y = RandomArray<double>({4, 5}, -1, 1, 2);
  auto plan = PlanMul(x.dims, y.dims, 2, 1);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->out_dims, (Dims{2, 3, 5}));
  EXPECT_EQ(plan->m, 6);
  EXPECT_EQ(plan->k, 4);
  EXPECT_EQ(plan->n, 5);
  auto expected =
      RefGemm(x.values.data(), 6, 4, false, y.values.data(), 4, 5, false, 1.0);
  EXPECT_TRUE(ValuesNear(ReplayMatmul(*plan, x, y, 1.0), expected, 1e-12, 0));

  auto other = PlanMul({2, 12}, {3, 4, 5}, 1, 2);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->out_dims, (Dims{2, 5}));
  EXPECT_EQ(PlanMul({2, 3}, {4, 5}, 1, 1).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanMul({2, 3}, {3, 5}, 2, 1).status().code(),
            StatusCode::kInvalidArgument);
}

struct MatmulCase {
  Dims x, y;
  bool trans_x, trans_y;
  Dims out;
  bool strided;
};

TEST(KernelPlansTest, MatmulV2BroadcastsBatchesLikeNumpy) {
  const std::vector<MatmulCase> cases = {
      {{3, 4}, {4, 5}, false, false, {3, 5}, true},
      {{4, 3}, {4, 5}, true, false, {3, 5}, true},
      {{3, 4}, {5, 4}, false, true, {3, 5}, true},
      {{4, 3}, {5, 4}, true, true, {3, 5}, true},
      {{2, 3, 4}, {2, 4, 5}, false, false, {2, 3, 5}, true},
      {{2, 3, 4}, {4, 5}, false, false, {2, 3, 5}, true},
      {{3, 4}, {2, 4, 5}, false, false, {2, 3, 5}, true},
      {{2, 1, 3, 4}, {5, 4, 6}, false, false, {2, 5, 3, 6}, false},
      {{2, 1, 4, 3}, {1, 3, 6, 4}, true, true, {2, 3, 3, 6}, false},
  };
  uint32_t seed = 10;
  for (const MatmulCase& c : cases) {
    SCOPED_TRACE(DimsToString(c.x) + " x " + DimsToString(c.y));
    auto plan = PlanMatmulV2(c.x, c.y, c.trans_x, c.trans_y);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->out_dims, c.out);
    EXPECT_EQ(plan->strided, c.strided);
    const Array x = RandomArray<double>(c.x, -1, 1, seed++);
    const Array y = RandomArray<double>(c.y, -1, 1, seed++);
    const Array expected = RefBatchedMatmul(x, y, c.trans_x, c.trans_y, 1.0);
    EXPECT_EQ(expected.dims, c.out);
    EXPECT_TRUE(
        ValuesNear(ReplayMatmul(*plan, x, y, 1.0), expected.values, 1e-12, 0));
  }
}

TEST(KernelPlansTest, MatmulV2Vectors) {
  auto vm = PlanMatmulV2({4}, {4, 5}, true, false);  // 1-D ignores trans
  ASSERT_TRUE(vm.ok()) << vm.status().ToString();
  EXPECT_EQ(vm->out_dims, (Dims{5}));
  auto mv = PlanMatmulV2({2, 3, 4}, {4}, false, true);
  ASSERT_TRUE(mv.ok()) << mv.status().ToString();
  EXPECT_EQ(mv->out_dims, (Dims{2, 3}));
  auto vv = PlanMatmulV2({4}, {4}, false, false);
  ASSERT_TRUE(vv.ok());
  EXPECT_EQ(Numel(vv->out_dims), 1);
  const Array x = RandomArray<double>({2, 3, 4}, -1, 1, 5);
  const Array y = RandomArray<double>({4}, -1, 1, 6);
  const Array expected =
      RefBatchedMatmul(x, Array{{4, 1}, y.values}, false, false, 1.0);
  EXPECT_TRUE(
      ValuesNear(ReplayMatmul(*mv, x, y, 1.0), expected.values, 1e-12, 0));
  EXPECT_EQ(PlanMatmulV2({3, 4}, {5, 6}, false, false).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanMatmulV2({2, 3, 4}, {3, 4, 5}, false, false).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(KernelPlansTest, MatmulV1FlattensBatchesAndSqueezesVectors) {
  auto batched = PlanMatmul({2, 3, 4, 5}, {6, 5, 7}, false, false);
  ASSERT_TRUE(batched.ok()) << batched.status().ToString();
  EXPECT_EQ(batched->batch, 6);
  EXPECT_EQ(batched->out_dims, (Dims{2, 3, 4, 7}));
  auto broadcast = PlanMatmul({3, 4}, {2, 4, 5}, false, false);
  ASSERT_TRUE(broadcast.ok());
  EXPECT_EQ(broadcast->x_stride, 0);
  EXPECT_EQ(broadcast->out_dims, (Dims{2, 3, 5}));
  auto row = PlanMatmul({4}, {4, 5}, false, false);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->out_dims, (Dims{5}));
  auto dot = PlanMatmul({4}, {4}, false, false);
  ASSERT_TRUE(dot.ok());
  EXPECT_EQ(dot->out_dims, (Dims{1}));
  auto outer = PlanMatmul({4}, {4}, true, true);  // [4,1] x [1,4]
  ASSERT_TRUE(outer.ok()) << outer.status().ToString();
  EXPECT_EQ(outer->out_dims, (Dims{4, 4}));
  EXPECT_EQ(PlanMatmul({2, 3, 4}, {3, 4, 5}, false, false).status().code(),
            StatusCode::kInvalidArgument);

  const Array x = RandomArray<double>({2, 4, 3}, -1, 1, 7);
  const Array y = RandomArray<double>({5, 4}, -1, 1, 8);
  auto plan = PlanMatmul(x.dims, y.dims, true, true);
  ASSERT_TRUE(plan.ok());
  const Array expected = RefBatchedMatmul(x, y, true, true, 0.5);
  EXPECT_TRUE(
      ValuesNear(ReplayMatmul(*plan, x, y, 0.5), expected.values, 1e-12, 0));
}

// ---------------------------------------------------------------------------
// Device tests.

// The context of cuda:0 for the device tests, with the CUDA kernels in the
// global registry. REQUIRES: a device is visible.
CudaDeviceContext* Cuda0() {
  static CudaDeviceContext* context = [] {
    RegisterCudaKernels(&KernelRegistry::Global());
    auto created = CudaDeviceContext::Create(Place::CUDA(0));
    PAREX_CHECK(created.ok(), created.status().ToString());
    return std::move(created).value().release();  // lives until exit
  }();
  return context;
}

template <typename T>
Tensor ToDevice(CudaDeviceContext* context, const Array& a) {
  Tensor host(DTypeOf<T>(), a.dims);
  for (size_t i = 0; i < a.values.size(); ++i) {
    host.data<T>()[i] = static_cast<T>(a.values[i]);
  }
  Tensor device(DTypeOf<T>(), a.dims, context->place());
  Status s =
      context->CopyFromHost(device.raw_data(), host.raw_data(), host.bytes());
  PAREX_CHECK(s.ok(), s.ToString());
  s = context->Synchronize();  // `host` dies here
  PAREX_CHECK(s.ok(), s.ToString());
  return device;
}

template <typename T>
Array ToHost(CudaDeviceContext* context, const Tensor& device) {
  EXPECT_EQ(device.place(), context->place());
  Tensor host(DTypeOf<T>(), device.dims());
  Status s =
      context->CopyToHost(host.raw_data(), device.raw_data(), device.bytes());
  PAREX_CHECK(s.ok(), s.ToString());
  s = context->Synchronize();
  PAREX_CHECK(s.ok(), s.ToString());
  Array a{device.dims(), {}};
  for (int64_t i = 0; i < host.numel(); ++i) {
    a.values.push_back(static_cast<double>(host.data<T>()[i]));
  }
  return a;
}

// One op of a one-op program, run on cuda:0 through RunOp. Input slot S
// argument i is variable "S_i"; outputs default to "Out".
template <typename T>
class CudaOp {
 public:
  explicit CudaOp(const std::string& type)
      : context_(Cuda0()), op_(program_.global_block().AppendOp(type)) {
    op_->SetOutput("Out", {"Out"});
  }

  CudaOp& Input(const std::string& slot, const std::vector<Array>& arrays) {
    std::vector<std::string> names;
    for (size_t i = 0; i < arrays.size(); ++i) {
      names.push_back(slot + "_" + std::to_string(i));
      program_.global_block().Var(names.back())->SetDType(DTypeOf<T>());
      *scope_.Var(names.back())->GetMutableTensor() =
          ToDevice<T>(context_, arrays[i]);
    }
    op_->SetInput(slot, names);
    return *this;
  }
  CudaOp& Input(const std::string& slot, const Array& array) {
    return Input(slot, std::vector<Array>{array});
  }
  // Out names an existing variable (in-place ops).
  CudaOp& OutputTo(const std::string& name) {
    op_->SetOutput("Out", {name});
    out_name_ = name;
    return *this;
  }
  template <typename A>
  CudaOp& Attr(const std::string& name, const A& value) {
    op_->SetAttr<A>(name, value);
    return *this;
  }

  // Runs the op; on success returns Out copied to the host.
  StatusOr<Array> Run() {
    PAREX_RETURN_IF_ERROR(RunOp(*op_, &scope_, context_));
    const Tensor* out = scope_.FindVar(out_name_)->GetTensor();
    if (out == nullptr) return Internal("no Out tensor");
    return ToHost<T>(context_, *out);
  }

 private:
  CudaDeviceContext* context_;
  Program program_;
  OpDesc* op_;
  Scope scope_;
  std::string out_name_ = "Out";
};

template <typename T>
struct Tolerance;
template <>
struct Tolerance<float> {
  static constexpr double kAbs = 1e-5, kRel = 1e-5;
};
template <>
struct Tolerance<double> {
  static constexpr double kAbs = 1e-12, kRel = 1e-12;
};

template <typename T>
class CudaOpsTest : public ::testing::Test {
 protected:
  // Compares dims and values; `scale` widens the tolerance for long sums.
  void ExpectNear(const StatusOr<Array>& actual, const Array& expected,
                  double scale = 1.0) {
    ASSERT_TRUE(actual.ok()) << actual.status().ToString();
    EXPECT_EQ(actual->dims, expected.dims);
    EXPECT_TRUE(ValuesNear(actual->values, expected.values,
                           Tolerance<T>::kAbs * scale,
                           Tolerance<T>::kRel * scale));
  }
};

using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CudaOpsTest, FloatTypes);

TYPED_TEST(CudaOpsTest, ElementwiseSameShapeAndBroadcast) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  const std::vector<
      std::pair<std::string, std::function<double(double, double)>>>
      ops = {{"elementwise_add", [](double a, double b) { return a + b; }},
             {"elementwise_sub", [](double a, double b) { return a - b; }},
             {"elementwise_mul", [](double a, double b) { return a * b; }},
             {"elementwise_div", [](double a, double b) { return a / b; }}};
  uint32_t seed = 1;
  for (const auto& [type, f] : ops) {
    for (const BroadcastCase& c : BroadcastCases()) {
      SCOPED_TRACE(type + " " + DimsToString(c.x) + " " + DimsToString(c.y) +
                   " axis " + std::to_string(c.axis));
      const Array x = RandomSignedArray<T>(c.x, 0.5, 2.0, seed++);
      const Array y = RandomSignedArray<T>(c.y, 0.5, 2.0, seed++);
      CudaOp<T> op(type);
      op.Input("X", x).Input("Y", y).template Attr<int>("axis", c.axis);
      // The reference rounds through T once per element, as the device does.
      Array expected = RefElementwise(x, y, c.axis, f);
      for (double& v : expected.values)
        v = static_cast<double>(static_cast<T>(v));
      this->ExpectNear(op.Run(), expected);
    }
  }
}

TYPED_TEST(CudaOpsTest, ElementwiseInPlace) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  const Array x = RandomArray<T>({4, 5}, -1, 1, 3);
  const Array y = RandomArray<T>({5}, -1, 1, 4);
  CudaOp<T> op("elementwise_add");
  op.Input("X", x).Input("Y", y).OutputTo("X_0");
  this->ExpectNear(op.Run(), RefElementwise(x, y, -1, std::plus<double>()));
}

TYPED_TEST(CudaOpsTest, ElementwiseBadShapesAreErrors) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  CudaOp<T> op("elementwise_add");
  op.Input("X", RandomArray<T>({2, 3}, -1, 1, 1))
      .Input("Y", RandomArray<T>({4}, -1, 1, 2));
  StatusOr<Array> result = op.Run();
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("elementwise_add"));
}

TYPED_TEST(CudaOpsTest, Activations) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  const std::vector<std::pair<std::string, std::function<double(double)>>> ops =
      {{"relu", [](double v) { return v > 0 ? v : 0.0; }},
       {"sigmoid", [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
       {"tanh", [](double v) { return std::tanh(v); }}};
  Array x = RandomArray<T>({5, 7}, -4, 4, 11);
  x.values[0] = 0.0;
  x.values[1] = -0.0;
  for (const auto& [type, f] : ops) {
    SCOPED_TRACE(type);
    CudaOp<T> op(type);
    op.Input("X", x);
    Array expected = x;
    for (double& v : expected.values) v = f(v);
    this->ExpectNear(op.Run(), expected);
  }
}

TYPED_TEST(CudaOpsTest, ActivationOfALargeTensorInPlace) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  // More elements than one grid covers: the grid-stride loop must go round.
  const Array x = RandomArray<T>({1 << 25}, -1, 1, 12);
  CudaOp<T> op("relu");
  op.Input("X", x).OutputTo("X_0");
  Array expected = x;
  for (double& v : expected.values) v = v > 0 ? v : 0.0;
  this->ExpectNear(op.Run(), expected);
}

TYPED_TEST(CudaOpsTest, Scale) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  const Array x = RandomArray<T>({3, 4}, -2, 2, 21);
  for (bool after : {true, false}) {
    SCOPED_TRACE(after ? "bias after scale" : "bias before scale");
    CudaOp<T> op("scale");
    op.Input("X", x)
        .template Attr<float>("scale", 2.5f)
        .template Attr<float>("bias", -0.5f)
        .template Attr<bool>("bias_after_scale", after);
    Array expected = x;
    for (double& v : expected.values)
      v = after ? 2.5 * v - 0.5 : 2.5 * (v - 0.5);
    this->ExpectNear(op.Run(), expected);
  }
}

TYPED_TEST(CudaOpsTest, ReduceSumAndMean) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  uint32_t seed = 31;
  for (const ReduceCase& c : ReduceCases()) {
    for (bool mean : {false, true}) {
      const std::string type = mean ? "reduce_mean" : "reduce_sum";
      SCOPED_TRACE(type + " " + DimsToString(c.x));
      const Array x = RandomArray<T>(c.x, -1, 1, seed++);
      CudaOp<T> op(type);
      op.Input("X", x)
          .template Attr<std::vector<int>>("dim", c.dims)
          .template Attr<bool>("keep_dim", c.keep_dim)
          .template Attr<bool>("reduce_all", c.reduce_all);
      StatusOr<Array> actual = op.Run();
      ASSERT_TRUE(actual.ok()) << actual.status().ToString();
      Array expected = RefReduce(x, ReducedFlags(c), mean);
      // A full reduction may be [1] or [] by schema version; compare counts.
      if (Numel(c.out) == 1) {
        EXPECT_EQ(Numel(actual->dims), 1);
      } else {
        EXPECT_EQ(actual->dims, c.out);
      }
      EXPECT_TRUE(ValuesNear(actual->values, expected.values,
                             Tolerance<T>::kAbs * 100,
                             Tolerance<T>::kRel * 100));
    }
  }
}

TYPED_TEST(CudaOpsTest, Mean) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  for (const Dims& dims : {Dims{7, 9}, Dims{100000}, Dims{1}}) {
    SCOPED_TRACE(DimsToString(dims));
    const Array x = RandomArray<T>(dims, -1, 1, 41);
    CudaOp<T> op("mean");
    op.Input("X", x);
    StatusOr<Array> actual = op.Run();
    ASSERT_TRUE(actual.ok()) << actual.status().ToString();
    EXPECT_EQ(Numel(actual->dims), 1);
    double sum = 0;
    for (double v : x.values) sum += v;
    EXPECT_TRUE(ValuesNear(actual->values, {sum / x.values.size()},
                           Tolerance<T>::kAbs * 10, Tolerance<T>::kRel * 10));
  }
}

TYPED_TEST(CudaOpsTest, SumOfSeveralInputs) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  for (int count : {1, 3, kMaxSumInputs, kMaxSumInputs * 2 + 3}) {
    SCOPED_TRACE(std::to_string(count) + " inputs");
    std::vector<Array> inputs;
    Array expected{{6, 5}, std::vector<double>(30, 0.0)};
    for (int k = 0; k < count; ++k) {
      inputs.push_back(RandomArray<T>({6, 5}, -1, 1, 50 + k));
      for (size_t i = 0; i < 30; ++i)
        expected.values[i] += inputs.back().values[i];
    }
    CudaOp<T> op("sum");
    op.Input("X", inputs);
    this->ExpectNear(op.Run(), expected, 10);
  }
}

TYPED_TEST(CudaOpsTest, SumAccumulatesInPlace) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  std::vector<Array> inputs;
  Array expected{{40}, std::vector<double>(40, 0.0)};
  for (int k = 0; k < kMaxSumInputs + 2; ++k) {
    inputs.push_back(RandomArray<T>({40}, -1, 1, 70 + k));
    for (size_t i = 0; i < 40; ++i)
      expected.values[i] += inputs.back().values[i];
  }
  CudaOp<T> op("sum");
  op.Input("X", inputs).OutputTo("X_0");  // gradient accumulation
  this->ExpectNear(op.Run(), expected, 10);
}

TYPED_TEST(CudaOpsTest, Mul) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  const Array x = RandomArray<T>({2, 3, 4}, -1, 1, 81);
  const Array y = RandomArray<T>({4, 5}, -1, 1, 82);
  CudaOp<T> op("mul");
  op.Input("X", x)
      .Input("Y", y)
      .template Attr<int>("x_num_col_dims", 2)
      .template Attr<int>("y_num_col_dims", 1);
  Array expected{
      {2, 3, 5},
      RefGemm(x.values.data(), 6, 4, false, y.values.data(), 4, 5, false, 1.0)};
  this->ExpectNear(op.Run(), expected, 10);

  const Array y3 = RandomArray<T>({3, 4, 5}, -1, 1, 83);
  CudaOp<T> flat("mul");
  flat.Input("X", Array{{2, 12}, x.values})
      .Input("Y", y3)
      .template Attr<int>("x_num_col_dims", 1)
      .template Attr<int>("y_num_col_dims", 2);
  Array expected_flat{{2, 5},
                      RefGemm(x.values.data(), 2, 12, false, y3.values.data(),
                              12, 5, false, 1.0)};
  this->ExpectNear(flat.Run(), expected_flat, 10);
}

TYPED_TEST(CudaOpsTest, MatmulTransposesBatchesAndAlpha) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  const std::vector<MatmulCase> cases = {
      {{3, 4}, {4, 5}, false, false, {3, 5}, true},
      {{4, 3}, {4, 5}, true, false, {3, 5}, true},
      {{3, 4}, {5, 4}, false, true, {3, 5}, true},
      {{4, 3}, {5, 4}, true, true, {3, 5}, true},
      {{2, 3, 4}, {2, 4, 5}, false, false, {2, 3, 5}, true},
      {{2, 3, 4}, {4, 5}, false, false, {2, 3, 5}, true},
      {{3, 4}, {2, 4, 5}, false, false, {2, 3, 5}, true},
      {{2, 4, 3}, {2, 5, 4}, true, true, {2, 3, 5}, true},
      {{64, 33}, {33, 65}, false, false, {64, 65}, true},
  };
  uint32_t seed = 90;
  for (const MatmulCase& c : cases) {
    SCOPED_TRACE(DimsToString(c.x) + " x " + DimsToString(c.y));
    const Array x = RandomArray<T>(c.x, -1, 1, seed++);
    const Array y = RandomArray<T>(c.y, -1, 1, seed++);
    CudaOp<T> op("matmul");
    op.Input("X", x)
        .Input("Y", y)
        .template Attr<bool>("transpose_X", c.trans_x)
        .template Attr<bool>("transpose_Y", c.trans_y)
        .template Attr<float>("alpha", 0.5f);
    this->ExpectNear(op.Run(),
                     RefBatchedMatmul(x, y, c.trans_x, c.trans_y, 0.5), 10);
  }
}

TYPED_TEST(CudaOpsTest, MatmulOfAVector) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  const Array x = RandomArray<T>({4}, -1, 1, 95);
  const Array y = RandomArray<T>({4, 5}, -1, 1, 96);
  CudaOp<T> op("matmul");
  op.Input("X", x).Input("Y", y);
  Array expected{
      {5},
      RefGemm(x.values.data(), 1, 4, false, y.values.data(), 4, 5, false, 1.0)};
  this->ExpectNear(op.Run(), expected, 10);
}

TYPED_TEST(CudaOpsTest, MatmulV2) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  const std::vector<MatmulCase> cases = {
      {{3, 4}, {4, 5}, false, false, {3, 5}, true},
      {{4, 3}, {5, 4}, true, true, {3, 5}, true},
      {{2, 3, 4}, {4, 5}, false, false, {2, 3, 5}, true},
      {{2, 1, 3, 4}, {5, 4, 6}, false, false, {2, 5, 3, 6}, false},
      {{2, 1, 4, 3}, {1, 3, 6, 4}, true, true, {2, 3, 3, 6}, false},
  };
  uint32_t seed = 100;
  for (const MatmulCase& c : cases) {
    SCOPED_TRACE(DimsToString(c.x) + " x " + DimsToString(c.y));
    const Array x = RandomArray<T>(c.x, -1, 1, seed++);
    const Array y = RandomArray<T>(c.y, -1, 1, seed++);
    CudaOp<T> op("matmul_v2");
    op.Input("X", x)
        .Input("Y", y)
        .template Attr<bool>("trans_x", c.trans_x)
        .template Attr<bool>("trans_y", c.trans_y);
    this->ExpectNear(op.Run(),
                     RefBatchedMatmul(x, y, c.trans_x, c.trans_y, 1.0), 10);
  }
  // Matrix times vector: Y's dim is dropped.
  const Array x = RandomArray<T>({2, 3, 4}, -1, 1, 120);
  const Array y = RandomArray<T>({4}, -1, 1, 121);
  CudaOp<T> op("matmul_v2");
  op.Input("X", x).Input("Y", y);
  Array expected =
      RefBatchedMatmul(x, Array{{4, 1}, y.values}, false, false, 1);
  expected.dims = {2, 3};
  this->ExpectNear(op.Run(), expected, 10);
}

TYPED_TEST(CudaOpsTest, InputOnTheWrongPlaceIsAnError) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  Program program;
  OpDesc* op = program.global_block().AppendOp("relu");
  op->SetInput("X", {"x"});
  op->SetOutput("Out", {"out"});
  Scope scope;
  *scope.Var("x")->GetMutableTensor() = MakeTensor<T>({2}, {T(-1), T(1)});
  Status status = RunOp(*op, &scope, Cuda0());
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("cpu:0"));
  EXPECT_THAT(status.message(), HasSubstr("'x'"));
}

// ---- Streams, events and the allocator ----

TEST(CudaDeviceContextTest, CopiesRoundTrip) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto context = CudaDeviceContext::Create(Place::CUDA(0));
  ASSERT_TRUE(context.ok()) << context.status().ToString();
  CudaDeviceContext& ctx = **context;
  std::vector<float> host(1000);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i);
  Tensor a(DType::kFP32, {1000}, ctx.place());
  Tensor b(DType::kFP32, {1000}, ctx.place());
  ASSERT_TRUE(ctx.CopyFromHost(a.raw_data(), host.data(), a.bytes()).ok());
  ASSERT_TRUE(ctx.CopyOnDevice(b.raw_data(), a.raw_data(), a.bytes()).ok());
  std::vector<float> back(1000, -1.0f);
  ASSERT_TRUE(ctx.CopyToHost(back.data(), b.raw_data(), b.bytes()).ok());
  ASSERT_TRUE(ctx.Synchronize().ok());
  EXPECT_EQ(back, host);
  EXPECT_TRUE(ctx.CopyToHost(back.data(), b.raw_data(), 0).ok());
}

TEST(CudaDeviceContextTest, EventsOrderTwoStreams) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto producer_or = CudaDeviceContext::Create(Place::CUDA(0));
  auto consumer_or = CudaDeviceContext::Create(Place::CUDA(0));
  ASSERT_TRUE(producer_or.ok()) << producer_or.status().ToString();
  ASSERT_TRUE(consumer_or.ok()) << consumer_or.status().ToString();
  CudaDeviceContext& producer = **producer_or;
  CudaDeviceContext& consumer = **consumer_or;
  ASSERT_NE(producer.stream(), consumer.stream());

  // Long work on the producer: 32 passes of x = x + 1 over 16M floats.
  const int64_t n = int64_t{1} << 24;
  const int kPasses = 32;
  Tensor x(DType::kFP32, {n}, producer.place());
  ASSERT_TRUE(producer.Activate().ok());
  ASSERT_EQ(cudaMemsetAsync(x.raw_data(), 0, x.bytes(), producer.stream()),
            cudaSuccess);
  for (int pass = 0; pass < kPasses; ++pass) {
    ASSERT_EQ(LaunchScale<float>(x.data<float>(), x.data<float>(), n, 1.0f,
                                 1.0f, true, nullptr, producer.stream()),
              cudaSuccess);
  }
  std::unique_ptr<Event> done = producer.CreateEvent();
  ASSERT_TRUE(producer.RecordEvent(done.get()).ok());

  // The consumer's copy is queued behind the event, not behind the host.
  ASSERT_TRUE(consumer.WaitEvent(done.get()).ok());
  std::vector<float> host(n, -1.0f);
  ASSERT_TRUE(consumer.CopyToHost(host.data(), x.raw_data(), x.bytes()).ok());
  ASSERT_TRUE(consumer.Synchronize().ok());
  EXPECT_TRUE(done->Query());
  EXPECT_EQ(std::count(host.begin(), host.end(), static_cast<float>(kPasses)),
            n);

  ASSERT_TRUE(done->Synchronize().ok());
  EXPECT_TRUE(done->Query());
  // Events of a CPU context are complete; waiting on one is a no-op.
  CpuDeviceContext cpu;
  std::unique_ptr<Event> cpu_event = cpu.CreateEvent();
  EXPECT_TRUE(consumer.WaitEvent(cpu_event.get()).ok());
  EXPECT_EQ(consumer.RecordEvent(cpu_event.get()).code(),
            StatusCode::kInvalidArgument);
  // An event never recorded does not block.
  std::unique_ptr<Event> unused = consumer.CreateEvent();
  EXPECT_TRUE(consumer.WaitEvent(unused.get()).ok());
  EXPECT_TRUE(unused->Query());
}

TEST(CudaDeviceContextTest, QueryTurnsTrueAfterTheWork) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto context = CudaDeviceContext::Create(Place::CUDA(0));
  ASSERT_TRUE(context.ok());
  CudaDeviceContext& ctx = **context;
  Tensor x(DType::kFP64, {1 << 22}, ctx.place());
  ASSERT_TRUE(ctx.Activate().ok());
  for (int pass = 0; pass < 8; ++pass) {
    ASSERT_EQ(LaunchUnary<double>(UnaryOp::kTanh, x.data<double>(),
                                  x.data<double>(), x.numel(), ctx.stream()),
              cudaSuccess);
  }
  std::unique_ptr<Event> event = ctx.CreateEvent();
  ASSERT_TRUE(ctx.RecordEvent(event.get()).ok());
  ASSERT_TRUE(event->Synchronize().ok());
  EXPECT_TRUE(event->Query());
  // Recording again reuses the event.
  ASSERT_TRUE(ctx.RecordEvent(event.get()).ok());
  ASSERT_TRUE(ctx.Synchronize().ok());
  EXPECT_TRUE(event->Query());
}

TEST(CudaAllocatorTest, StatsTrackDeviceBlocksAndReuse) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  Cuda0();  // registers the CUDA allocator
  Allocator* allocator = GetAllocator(Place::CUDA(0));
  EXPECT_EQ(allocator->place(), Place::CUDA(0));
  const size_t kBytes = size_t{1} << 20;
  const AllocatorStats before = allocator->stats();
  {
    Tensor t(DType::kFP32, {256, 1024}, Place::CUDA(0));
    const AllocatorStats during = allocator->stats();
    EXPECT_GE(during.bytes_in_use, before.bytes_in_use + kBytes);
    EXPECT_GE(during.peak_bytes_in_use, during.bytes_in_use);
    EXPECT_EQ(during.num_allocs, before.num_allocs + 1);
    cudaPointerAttributes attributes{};
    ASSERT_EQ(cudaPointerGetAttributes(&attributes, t.raw_data()), cudaSuccess);
    EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
    EXPECT_EQ(attributes.device, 0);
  }
  const AllocatorStats freed = allocator->stats();
  EXPECT_EQ(freed.bytes_in_use, before.bytes_in_use);
  EXPECT_GE(freed.bytes_cached, kBytes);
  {
    Tensor again(DType::kFP32, {256, 1024}, Place::CUDA(0));  // from the cache
    EXPECT_EQ(allocator->stats().num_system_allocs, freed.num_system_allocs);
  }
  allocator->ReleaseCache();
  EXPECT_EQ(allocator->stats().bytes_cached, 0u);
  EXPECT_EQ(allocator->Allocate(0), nullptr);
}

}  // namespace
}  // namespace parex
