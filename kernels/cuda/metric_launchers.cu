// Device kernels of top_k (one thread per slot keeps its row's top k by
// insertion, as the CPU kernel does, so ties fall on the lower index) and
// accuracy (one block counts the rows whose label is among their indices).
#include "kernels/cuda/grid_stride.cuh"
#include "kernels/cuda/train_launchers.h"

namespace parex {
namespace {

using cuda_loops::BlocksFor;
using cuda_loops::FirstIndex;
using cuda_loops::GridStride;
using cuda_loops::kThreads;

template <typename T>
__global__ void TopKKernel(const T* x, T* out, int64_t* indices, int64_t slots,
                           int64_t n, int64_t inner, int64_t k) {
  for (int64_t slot = FirstIndex(); slot < slots; slot += GridStride()) {
    const int64_t o = slot / inner, i = slot % inner;
    const T* row = x + o * n * inner + i;
    int64_t* at = indices + o * k * inner + i;  // slot m at at[m * inner]
    int64_t size = 0;
    for (int64_t j = 0; j < n; ++j) {
      int64_t pos = size;
      while (pos > 0 && row[j * inner] > row[at[(pos - 1) * inner] * inner])
        --pos;
      if (pos >= k) continue;
      const int64_t end = size < k - 1 ? size : k - 1;
      for (int64_t m = end; m > pos; --m) at[m * inner] = at[(m - 1) * inner];
      at[pos * inner] = j;
      size = size + 1 < k ? size + 1 : k;
    }
    T* values = out + o * k * inner + i;
    for (int64_t m = 0; m < k; ++m) {
      values[m * inner] = row[at[m * inner] * inner];
    }
  }
}

__global__ void AccuracyKernel(const int64_t* indices, const int64_t* labels,
                               int64_t rows, int64_t k, float* accuracy,
                               int32_t* correct, int32_t* total) {
  __shared__ unsigned long long count;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  unsigned long long mine = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    for (int64_t m = 0; m < k; ++m) {
      if (indices[r * k + m] == labels[r]) {
        ++mine;
        break;
      }
    }
  }
  atomicAdd(&count, mine);
  __syncthreads();
  if (threadIdx.x == 0) {
    *accuracy =
        rows > 0 ? static_cast<float>(count) / static_cast<float>(rows) : 0.f;
    *correct = static_cast<int32_t>(count);
    *total = static_cast<int32_t>(rows);
  }
}

}  // namespace

template <typename T>
cudaError_t LaunchTopK(const T* x, T* out, int64_t* indices, int64_t outer,
                       int64_t n, int64_t inner, int64_t k,
                       cudaStream_t stream) {
  const int64_t slots = outer * inner;
  if (slots == 0 || k == 0) return cudaSuccess;
  TopKKernel<T><<<BlocksFor(slots), kThreads, 0, stream>>>(x, out, indices,
                                                           slots, n, inner, k);
  return cudaGetLastError();
}

cudaError_t LaunchAccuracy(const int64_t* indices, const int64_t* labels,
                           int64_t rows, int64_t k, float* accuracy,
                           int32_t* correct, int32_t* total,
                           cudaStream_t stream) {
  AccuracyKernel<<<1, kThreads, 0, stream>>>(indices, labels, rows, k, accuracy,
                                             correct, total);
  return cudaGetLastError();
}

template cudaError_t LaunchTopK<float>(const float*, float*, int64_t*, int64_t,
                                       int64_t, int64_t, int64_t, cudaStream_t);
template cudaError_t LaunchTopK<double>(const double*, double*, int64_t*,
                                        int64_t, int64_t, int64_t, int64_t,
                                        cudaStream_t);

}  // namespace parex
