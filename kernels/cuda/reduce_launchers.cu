// Sum reductions on the device. Long rows (inner == 1) take one block per
// row with a shuffle tree; few outputs over a long reduce take a block per
// 32 outputs (ReduceColumnsKernel); everything else one thread per output,
// which reads coalesced when the kept dims are innermost. Accumulation is in
// T, in a fixed order, so results are reproducible run to run.
#include <algorithm>

#include "kernels/cuda/cuda_launchers.h"

namespace parex {
namespace {

constexpr int kThreads = 256;  // a multiple of the warp size
constexpr int kWarp = 32;
constexpr int64_t kMaxBlocks = 65535;
// Rows at least this long use a block per row.
constexpr int64_t kBlockRowThreshold = 128;

int BlocksFor(int64_t n) {
  return static_cast<int>(
      std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
}

template <typename T>
__device__ __forceinline__ T Finish(T sum, int64_t count, bool mean) {
  return mean ? sum / static_cast<T>(count) : sum;
}

template <typename T>
__device__ __forceinline__ T WarpSum(T v) {
  for (int offset = kWarp / 2; offset > 0; offset >>= 1) {
    v += __shfl_down_sync(0xffffffffu, v, offset);
  }
  return v;
}

// The sum of `v` over the block, valid in thread 0. `scratch` holds one T
// per warp. Ends with a barrier, so scratch may be reused at once.
template <typename T>
__device__ T BlockSum(T v, T* scratch) {
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
  v = WarpSum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / kWarp;
  v = threadIdx.x < warps ? scratch[threadIdx.x] : T(0);
  if (warp == 0) v = WarpSum(v);
  __syncthreads();
  return v;
}

// x as [outer, reduce]; one block per row.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    ReduceRowsKernel(const T* x, T* out, int64_t outer, int64_t reduce,
                     bool mean) {
  __shared__ T scratch[kThreads / kWarp];
  for (int64_t row = blockIdx.x; row < outer; row += gridDim.x) {
    const T* p = x + row * reduce;
    T acc = T(0);
    for (int64_t r = threadIdx.x; r < reduce; r += blockDim.x) acc += p[r];
    acc = BlockSum(acc, scratch);
    if (threadIdx.x == 0) out[row] = Finish(acc, reduce, mean);
  }
}

// x as [outer, reduce, inner]; one thread per output (o, i).
template <typename T>
__global__ void ReduceMiddleKernel(const T* x, T* out, int64_t outer,
                                   int64_t reduce, int64_t inner, bool mean) {
  const int64_t total = outer * inner;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       j < total; j += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t o = j / inner;
    const int64_t i = j % inner;
    const T* p = x + o * reduce * inner + i;
    T acc = T(0);
    for (int64_t r = 0; r < reduce; ++r) acc += p[r * inner];
    out[j] = Finish(acc, reduce, mean);
  }
}

// x as [outer, reduce, inner] with few outputs and a long reduce (a bias
// gradient: [batch, features] summed over the batch): blocks of
// kColumns x kSlices threads, one block per (32 columns, o); slice ty adds
// rows ty, ty + kSlices, ... of its column, then the slices are added in a
// fixed tree. One thread per output left most of the GPU idle.
constexpr int kColumns = 32;
constexpr int kSlices = 16;

template <typename T>
__global__ void __launch_bounds__(kColumns* kSlices)
    ReduceColumnsKernel(const T* x, T* out, int64_t outer, int64_t reduce,
                        int64_t inner, bool mean) {
  __shared__ T partial[kSlices][kColumns + 1];
  const int tx = threadIdx.x % kColumns, ty = threadIdx.x / kColumns;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kColumns + tx;
  for (int64_t o = blockIdx.y; o < outer; o += gridDim.y) {
    T acc = T(0);
    if (i < inner) {
      const T* p = x + o * reduce * inner + i;
      for (int64_t r = ty; r < reduce; r += kSlices) acc += p[r * inner];
    }
    partial[ty][tx] = acc;
    __syncthreads();
    for (int half = kSlices / 2; half > 0; half /= 2) {
      if (ty < half) partial[ty][tx] += partial[ty + half][tx];
      __syncthreads();
    }
    if (ty == 0 && i < inner) {
      out[o * inner + i] = Finish(partial[0][tx], reduce, mean);
    }
    __syncthreads();
  }
}

template <typename T>
__global__ void ReduceGeneralKernel(const T* x, T* out, ReduceShape shape,
                                    int64_t out_numel, int64_t reduce_count,
                                    bool mean) {
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       j < out_numel; j += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    int64_t rest = j, base = 0;
    for (int d = shape.kept_rank - 1; d >= 0; --d) {
      base += rest % shape.kept_extents[d] * shape.kept_strides[d];
      rest /= shape.kept_extents[d];
    }
    T acc = T(0);
    for (int64_t r = 0; r < reduce_count; ++r) {
      int64_t rest_r = r, offset = base;
      for (int d = shape.reduced_rank - 1; d >= 0; --d) {
        offset += rest_r % shape.reduced_extents[d] * shape.reduced_strides[d];
        rest_r /= shape.reduced_extents[d];
      }
      acc += x[offset];
    }
    out[j] = Finish(acc, reduce_count, mean);
  }
}

}  // namespace

template <typename T>
cudaError_t LaunchReduceSum(const T* x, T* out, int64_t outer, int64_t reduce,
                            int64_t inner, bool mean, cudaStream_t stream) {
  const int64_t total = outer * inner;
  if (total <= 0) return cudaSuccess;
  if (inner == 1 && reduce >= kBlockRowThreshold) {
    const int blocks = static_cast<int>(std::min<int64_t>(outer, kMaxBlocks));
    ReduceRowsKernel<T>
        <<<blocks, kThreads, 0, stream>>>(x, out, outer, reduce, mean);
  } else if (reduce >= 2 * kSlices && total <= 32768) {
    const dim3 grid(
        static_cast<unsigned>((inner + kColumns - 1) / kColumns),
        static_cast<unsigned>(std::min<int64_t>(outer, kMaxBlocks)));
    ReduceColumnsKernel<T><<<grid, kColumns * kSlices, 0, stream>>>(
        x, out, outer, reduce, inner, mean);
  } else {
    ReduceMiddleKernel<T><<<BlocksFor(total), kThreads, 0, stream>>>(
        x, out, outer, reduce, inner, mean);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchReduceSumGeneral(const T* x, T* out, const ReduceShape& shape,
                                   int64_t out_numel, int64_t reduce_count,
                                   bool mean, cudaStream_t stream) {
  if (out_numel <= 0) return cudaSuccess;
  ReduceGeneralKernel<T><<<BlocksFor(out_numel), kThreads, 0, stream>>>(
      x, out, shape, out_numel, reduce_count, mean);
  return cudaGetLastError();
}

#define PAREX_INSTANTIATE_REDUCE_LAUNCHERS(T)                             \
  template cudaError_t LaunchReduceSum<T>(const T*, T*, int64_t, int64_t, \
                                          int64_t, bool, cudaStream_t);   \
  template cudaError_t LaunchReduceSumGeneral<T>(                         \
      const T*, T*, const ReduceShape&, int64_t, int64_t, bool, cudaStream_t);

PAREX_INSTANTIATE_REDUCE_LAUNCHERS(float)
PAREX_INSTANTIATE_REDUCE_LAUNCHERS(double)

}  // namespace parex
