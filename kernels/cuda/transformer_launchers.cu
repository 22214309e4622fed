// Device kernels of the transformer ops (transformer_launchers.h). The
// element-wise ones walk grid-stride loops; layer_norm runs one block per
// row (striding over rows past the grid) and sums in double (BlockSum);
// the per-column sums of layer_norm_grad and lookup_table_v2_grad give each
// column one thread that walks the rows in order, so every run gives the
// same bits.
#include <cmath>

#include "kernels/cuda/block_sum.cuh"
#include "kernels/cuda/grid_stride.cuh"
#include "kernels/cuda/transformer_launchers.h"

namespace parex {
namespace {

using cuda_loops::BlocksFor;
using cuda_loops::BlockSum;
using cuda_loops::FirstIndex;
using cuda_loops::GridStride;
using cuda_loops::kChannelThreads;
using cuda_loops::kMaxBlocks;
using cuda_loops::kThreads;

int RowBlocks(int64_t rows) {
  return static_cast<int>(rows < kMaxBlocks ? (rows > 0 ? rows : 1)
                                            : kMaxBlocks);
}

// ---- strided gather ----

template <typename T>
__global__ void GatherKernel(const T* src, T* dst, GatherShape shape, int64_t n,
                             bool scaled, T scale) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    int64_t rest = i, offset = 0;
    for (int d = shape.rank - 1; d >= 0; --d) {
      const int64_t index = rest % shape.extents[d];
      rest /= shape.extents[d];
      offset += index * shape.src_strides[d];
    }
    dst[i] = scaled ? src[offset] * scale : src[offset];
  }
}

// ---- gelu ----

// sqrt(2 / pi), 1 / sqrt(2), 1 / sqrt(2 pi): the CPU kernel's constants.
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

__device__ __forceinline__ float Erf(float v) { return erff(v); }
__device__ __forceinline__ double Erf(double v) { return erf(v); }
__device__ __forceinline__ float Tanh(float v) { return tanhf(v); }
__device__ __forceinline__ double Tanh(double v) { return tanh(v); }
__device__ __forceinline__ float Exp(float v) { return expf(v); }
__device__ __forceinline__ double Exp(double v) { return exp(v); }
__device__ __forceinline__ float Sqrt(float v) { return sqrtf(v); }
__device__ __forceinline__ double Sqrt(double v) { return sqrt(v); }

template <typename T>
__global__ void GeluKernel(const T* x, T* out, int64_t n, bool approximate) {
  const T k = static_cast<T>(kSqrt2OverPi);
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    const T v = x[i];
    if (approximate) {
      out[i] = T(0.5) * v * (T(1) + Tanh(k * (v + T(0.044715) * v * v * v)));
    } else {
      out[i] = T(0.5) * v * (T(1) + Erf(v * static_cast<T>(kSqrtHalf)));
    }
  }
}

template <typename T>
__global__ void GeluGradKernel(const T* x, const T* dout, T* dx, int64_t n,
                               bool approximate) {
  const T k = static_cast<T>(kSqrt2OverPi);
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    const T v = x[i];
    const T g = dout[i];
    if (approximate) {
      const T t = Tanh(k * (v + T(0.044715) * v * v * v));
      const T d_inner = k * (T(1) + T(3) * T(0.044715) * v * v);
      dx[i] = g * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * d_inner);
    } else {
      const T cdf = T(0.5) * (T(1) + Erf(v * static_cast<T>(kSqrtHalf)));
      const T pdf = Exp(T(-0.5) * v * v) * static_cast<T>(kInvSqrt2Pi);
      dx[i] = g * (cdf + v * pdf);
    }
  }
}

// ---- layer_norm ----

template <typename T>
__global__ void LayerNormKernel(const T* x, const T* scale, const T* bias, T* y,
                                T* mean_out, T* var_out, int64_t rows,
                                int64_t cols, T epsilon) {
  __shared__ double shared[kChannelThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = x + r * cols;
    double partial = 0;
    for (int64_t i = threadIdx.x; i < cols; i += kChannelThreads) {
      partial += static_cast<double>(row[i]);
    }
    const T mean = static_cast<T>(BlockSum(partial, shared) / cols);
    partial = 0;
    for (int64_t i = threadIdx.x; i < cols; i += kChannelThreads) {
      const double d = static_cast<double>(row[i] - mean);
      partial += d * d;
    }
    const T var = static_cast<T>(BlockSum(partial, shared) / cols);
    const T rstd = T(1) / Sqrt(var + epsilon);
    T* out = y + r * cols;
    for (int64_t i = threadIdx.x; i < cols; i += kChannelThreads) {
      T v = (row[i] - mean) * rstd;
      if (scale != nullptr) v *= scale[i];
      if (bias != nullptr) v += bias[i];
      out[i] = v;
    }
    if (threadIdx.x == 0) {
      if (mean_out != nullptr) mean_out[r] = mean;
      if (var_out != nullptr) var_out[r] = var;
    }
  }
}

// dx, one block per row.
template <typename T>
__global__ void LayerNormGradXKernel(const T* x, const T* scale, const T* mean,
                                     const T* var, const T* dy, T* dx,
                                     int64_t rows, int64_t cols, T epsilon) {
  __shared__ double shared[kChannelThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = x + r * cols;
    const T* dyr = dy + r * cols;
    const T m = mean[r];
    const T rstd = T(1) / Sqrt(var[r] + epsilon);
    double g_part = 0, gx_part = 0;
    for (int64_t i = threadIdx.x; i < cols; i += kChannelThreads) {
      const T g = scale != nullptr ? dyr[i] * scale[i] : dyr[i];
      g_part += static_cast<double>(g);
      gx_part += static_cast<double>(g * (row[i] - m) * rstd);
    }
    const T g_mean = static_cast<T>(BlockSum(g_part, shared) / cols);
    const T gx_mean = static_cast<T>(BlockSum(gx_part, shared) / cols);
    T* dxr = dx + r * cols;
    for (int64_t i = threadIdx.x; i < cols; i += kChannelThreads) {
      const T g = scale != nullptr ? dyr[i] * scale[i] : dyr[i];
      const T x_hat = (row[i] - m) * rstd;
      dxr[i] = rstd * (g - g_mean - x_hat * gx_mean);
    }
  }
}

// dscale / dbias, one thread per column summing the rows in order.
template <typename T>
__global__ void LayerNormGradParamsKernel(const T* x, const T* mean,
                                          const T* var, const T* dy, T* dscale,
                                          T* dbias, int64_t rows, int64_t cols,
                                          T epsilon) {
  for (int64_t i = FirstIndex(); i < cols; i += GridStride()) {
    T scale_sum = 0, bias_sum = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const T g = dy[r * cols + i];
      const T rstd = T(1) / Sqrt(var[r] + epsilon);
      scale_sum += g * ((x[r * cols + i] - mean[r]) * rstd);
      bias_sum += g;
    }
    if (dscale != nullptr) dscale[i] = scale_sum;
    if (dbias != nullptr) dbias[i] = bias_sum;
  }
}

// ---- lookup_table_v2 ----

__device__ __forceinline__ int64_t IdAt(const LookupIds& ids, int64_t i) {
  return ids.is_int32 ? static_cast<const int32_t*>(ids.data)[i]
                      : static_cast<const int64_t*>(ids.data)[i];
}

template <typename T>
__global__ void LookupKernel(const T* table, LookupIds ids, T* out,
                             int64_t count, int64_t table_rows, int64_t width) {
  const int64_t n = count * width;
  for (int64_t e = FirstIndex(); e < n; e += GridStride()) {
    const int64_t i = e / width, j = e - i * width;
    const int64_t id = IdAt(ids, i);
    if (ids.padding_idx != -1 && id == ids.padding_idx) {
      out[e] = T(0);
    } else if (id < 0 || id >= table_rows) {
      out[e] = static_cast<T>(NAN);
    } else {
      out[e] = table[id * width + j];
    }
  }
}

template <typename T>
__global__ void ZeroKernel(T* out, int64_t n) {
  for (int64_t e = FirstIndex(); e < n; e += GridStride()) out[e] = T(0);
}

// Launched after ZeroKernel on the same stream.
template <typename T>
__global__ void LookupGradKernel(LookupIds ids, const T* dout, T* dtable,
                                 int64_t count, int64_t table_rows,
                                 int64_t width) {
  for (int64_t j = FirstIndex(); j < width; j += GridStride()) {
    for (int64_t i = 0; i < count; ++i) {
      const int64_t id = IdAt(ids, i);
      if (ids.padding_idx != -1 && id == ids.padding_idx) continue;
      if (id < 0 || id >= table_rows) continue;
      dtable[id * width + j] += dout[i * width + j];
    }
  }
}

}  // namespace

template <typename T>
cudaError_t LaunchGather(const T* src, T* dst, const GatherShape& shape,
                         int64_t n, bool scaled, T scale, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  GatherKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(src, dst, shape, n,
                                                         scaled, scale);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchGelu(const T* x, T* out, int64_t n, bool approximate,
                       cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  GeluKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(x, out, n, approximate);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchGeluGrad(const T* x, const T* dout, T* dx, int64_t n,
                           bool approximate, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  GeluGradKernel<T>
      <<<BlocksFor(n), kThreads, 0, stream>>>(x, dout, dx, n, approximate);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchLayerNorm(const T* x, const T* scale, const T* bias, T* y,
                            T* mean, T* var, int64_t rows, int64_t cols,
                            T epsilon, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  LayerNormKernel<T><<<RowBlocks(rows), kChannelThreads, 0, stream>>>(
      x, scale, bias, y, mean, var, rows, cols, epsilon);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchLayerNormGrad(const T* x, const T* scale, const T* mean,
                                const T* var, const T* dy, T* dx, T* dscale,
                                T* dbias, int64_t rows, int64_t cols, T epsilon,
                                cudaStream_t stream) {
  if (cols <= 0) return cudaSuccess;
  if (dx != nullptr && rows > 0) {
    LayerNormGradXKernel<T><<<RowBlocks(rows), kChannelThreads, 0, stream>>>(
        x, scale, mean, var, dy, dx, rows, cols, epsilon);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  if (dscale != nullptr || dbias != nullptr) {
    LayerNormGradParamsKernel<T><<<BlocksFor(cols), kThreads, 0, stream>>>(
        x, mean, var, dy, dscale, dbias, rows, cols, epsilon);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchLookup(const T* table, const LookupIds& ids, T* out,
                         int64_t count, int64_t table_rows, int64_t width,
                         cudaStream_t stream) {
  if (count <= 0 || width <= 0) return cudaSuccess;
  LookupKernel<T><<<BlocksFor(count * width), kThreads, 0, stream>>>(
      table, ids, out, count, table_rows, width);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchLookupGrad(const LookupIds& ids, const T* dout, T* dtable,
                             int64_t count, int64_t table_rows, int64_t width,
                             cudaStream_t stream) {
  if (table_rows <= 0 || width <= 0) return cudaSuccess;
  ZeroKernel<T><<<BlocksFor(table_rows * width), kThreads, 0, stream>>>(
      dtable, table_rows * width);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  if (count <= 0) return cudaSuccess;
  LookupGradKernel<T><<<BlocksFor(width), kThreads, 0, stream>>>(
      ids, dout, dtable, count, table_rows, width);
  return cudaGetLastError();
}

#define PAREX_INSTANTIATE_TRANSFORMER(T)                                     \
  template cudaError_t LaunchGather<T>(const T*, T*, const GatherShape&,     \
                                       int64_t, bool, T, cudaStream_t);      \
  template cudaError_t LaunchGelu<T>(const T*, T*, int64_t, bool,            \
                                     cudaStream_t);                          \
  template cudaError_t LaunchGeluGrad<T>(const T*, const T*, T*, int64_t,    \
                                         bool, cudaStream_t);                \
  template cudaError_t LaunchLayerNorm<T>(const T*, const T*, const T*, T*,  \
                                          T*, T*, int64_t, int64_t, T,       \
                                          cudaStream_t);                     \
  template cudaError_t LaunchLayerNormGrad<T>(                               \
      const T*, const T*, const T*, const T*, const T*, T*, T*, T*, int64_t, \
      int64_t, T, cudaStream_t);                                             \
  template cudaError_t LaunchLookup<T>(const T*, const LookupIds&, T*,       \
                                       int64_t, int64_t, int64_t,            \
                                       cudaStream_t);                        \
  template cudaError_t LaunchLookupGrad<T>(const LookupIds&, const T*, T*,   \
                                           int64_t, int64_t, int64_t,        \
                                           cudaStream_t);
PAREX_INSTANTIATE_TRANSFORMER(float)
PAREX_INSTANTIATE_TRANSFORMER(double)
#undef PAREX_INSTANTIATE_TRANSFORMER

}  // namespace parex
