// Device kernels of softmax and softmax with cross-entropy. One thread per
// row of the collapsed [outer, 1, inner] view walks the row's n elements
// (stride inner) three times: the max, the log of the shifted sum, then the
// outputs; rows are independent, so the grid strides over rows. Arithmetic
// is in T, as on the CPU.
#include <cmath>

#include "kernels/cuda/grid_stride.cuh"
#include "kernels/cuda/train_launchers.h"

namespace parex {
namespace {

using cuda_loops::BlocksFor;
using cuda_loops::FirstIndex;
using cuda_loops::GridStride;
using cuda_loops::kThreads;

__device__ __forceinline__ float Exp(float v) { return expf(v); }
__device__ __forceinline__ double Exp(double v) { return exp(v); }
__device__ __forceinline__ float Log(float v) { return logf(v); }
__device__ __forceinline__ double Log(double v) { return log(v); }

// The row's first element and its max and log(sum(exp(x - max))).
template <typename T>
struct RowStats {
  int64_t base;
  T max;
  T log_sum;
};

template <typename T>
__device__ RowStats<T> StatsOf(const T* x, int64_t row, int64_t n,
                               int64_t inner) {
  const int64_t o = row / inner, i = row % inner;
  RowStats<T> s;
  s.base = o * n * inner + i;
  T m = -INFINITY;
  for (int64_t k = 0; k < n; ++k) m = fmax(m, x[s.base + k * inner]);
  T sum = 0;
  for (int64_t k = 0; k < n; ++k) sum += Exp(x[s.base + k * inner] - m);
  s.max = m;
  s.log_sum = Log(sum);
  return s;
}

__device__ __forceinline__ int64_t HardLabel(const SoftmaxLabels& l,
                                             int64_t row) {
  return l.is_int32 ? static_cast<const int32_t*>(l.data)[row]
                    : static_cast<const int64_t*>(l.data)[row];
}

template <typename T>
__global__ void SoftmaxKernel(const T* x, T* y, int64_t rows, int64_t n,
                              int64_t inner) {
  for (int64_t r = FirstIndex(); r < rows; r += GridStride()) {
    const RowStats<T> s = StatsOf(x, r, n, inner);
    for (int64_t k = 0; k < n; ++k) {
      const int64_t e = s.base + k * inner;
      y[e] = Exp(x[e] - s.max - s.log_sum);
    }
  }
}

template <typename T>
__global__ void SoftmaxCrossEntropyKernel(const T* x, SoftmaxLabels labels,
                                          T* y, T* loss, int64_t rows,
                                          int64_t n, int64_t inner) {
  for (int64_t r = FirstIndex(); r < rows; r += GridStride()) {
    const RowStats<T> s = StatsOf(x, r, n, inner);
    T l = 0;
    if (labels.soft) {
      const T* soft = static_cast<const T*>(labels.data);
      for (int64_t k = 0; k < n; ++k) {
        const int64_t e = s.base + k * inner;
        l -= soft[e] * (x[e] - s.max - s.log_sum);
      }
    } else {
      const int64_t label = HardLabel(labels, r);
      if (label != labels.ignore_index) {
        l = (label < 0 || label >= n)
                ? T(NAN)
                : -(x[s.base + label * inner] - s.max - s.log_sum);
      }
    }
    for (int64_t k = 0; k < n; ++k) {
      const int64_t e = s.base + k * inner;
      y[e] = Exp(x[e] - s.max - s.log_sum);
    }
    loss[r] = l;
  }
}

template <typename T>
__global__ void SoftmaxCrossEntropyGradKernel(const T* softmax,
                                              SoftmaxLabels labels,
                                              const T* dloss, T* dlogits,
                                              int64_t numel, int64_t n,
                                              int64_t inner) {
  for (int64_t e = FirstIndex(); e < numel; e += GridStride()) {
    const int64_t i = e % inner;
    const int64_t k = (e / inner) % n;
    const int64_t o = e / (inner * n);
    const int64_t r = o * inner + i;
    if (labels.soft) {
      dlogits[e] =
          (softmax[e] - static_cast<const T*>(labels.data)[e]) * dloss[r];
    } else {
      const int64_t label = HardLabel(labels, r);
      dlogits[e] = label == labels.ignore_index
                       ? T(0)
                       : (softmax[e] - (k == label ? T(1) : T(0))) * dloss[r];
    }
  }
}

template <typename T>
__global__ void SoftmaxGradKernel(const T* out, const T* dout, T* dx,
                                  int64_t rows, int64_t n, int64_t inner) {
  for (int64_t r = FirstIndex(); r < rows; r += GridStride()) {
    const int64_t base = (r / inner) * n * inner + r % inner;
    T dot = 0;
    for (int64_t k = 0; k < n; ++k) {
      dot += dout[base + k * inner] * out[base + k * inner];
    }
    for (int64_t k = 0; k < n; ++k) {
      const int64_t e = base + k * inner;
      dx[e] = out[e] * (dout[e] - dot);
    }
  }
}

}  // namespace

template <typename T>
cudaError_t LaunchSoftmax(const T* x, T* y, int64_t outer, int64_t n,
                          int64_t inner, cudaStream_t stream) {
  const int64_t rows = outer * inner;
  if (rows == 0 || n == 0) return cudaSuccess;
  SoftmaxKernel<T>
      <<<BlocksFor(rows), kThreads, 0, stream>>>(x, y, rows, n, inner);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchSoftmaxCrossEntropy(const T* logits,
                                      const SoftmaxLabels& labels, T* softmax,
                                      T* loss, int64_t outer, int64_t n,
                                      int64_t inner, cudaStream_t stream) {
  const int64_t rows = outer * inner;
  if (rows == 0 || n == 0) return cudaSuccess;
  SoftmaxCrossEntropyKernel<T><<<BlocksFor(rows), kThreads, 0, stream>>>(
      logits, labels, softmax, loss, rows, n, inner);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchSoftmaxCrossEntropyGrad(const T* softmax,
                                          const SoftmaxLabels& labels,
                                          const T* dloss, T* dlogits,
                                          int64_t outer, int64_t n,
                                          int64_t inner, cudaStream_t stream) {
  const int64_t numel = outer * n * inner;
  if (numel == 0) return cudaSuccess;
  SoftmaxCrossEntropyGradKernel<T><<<BlocksFor(numel), kThreads, 0, stream>>>(
      softmax, labels, dloss, dlogits, numel, n, inner);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchSoftmaxGrad(const T* out, const T* dout, T* dx, int64_t outer,
                              int64_t n, int64_t inner, cudaStream_t stream) {
  const int64_t rows = outer * inner;
  if (rows == 0 || n == 0) return cudaSuccess;
  SoftmaxGradKernel<T>
      <<<BlocksFor(rows), kThreads, 0, stream>>>(out, dout, dx, rows, n, inner);
  return cudaGetLastError();
}

#define PAREX_INSTANTIATE(T)                                                   \
  template cudaError_t LaunchSoftmax<T>(const T*, T*, int64_t, int64_t,        \
                                        int64_t, cudaStream_t);                \
  template cudaError_t LaunchSoftmaxCrossEntropy<T>(                           \
      const T*, const SoftmaxLabels&, T*, T*, int64_t, int64_t, int64_t,       \
      cudaStream_t);                                                           \
  template cudaError_t LaunchSoftmaxCrossEntropyGrad<T>(                       \
      const T*, const SoftmaxLabels&, const T*, T*, int64_t, int64_t, int64_t, \
      cudaStream_t);                                                           \
  template cudaError_t LaunchSoftmaxGrad<T>(const T*, const T*, T*, int64_t,   \
                                            int64_t, int64_t, cudaStream_t);
PAREX_INSTANTIATE(float)
PAREX_INSTANTIATE(double)
#undef PAREX_INSTANTIATE

}  // namespace parex
