// A block-wide sum in double for the per-channel reductions of the convnet
// kernels: every thread contributes one partial sum and every thread gets
// the total, combined in a fixed tree order (the same bits every run).
// Device code only (included by .cu files).
#pragma once

namespace parex {
namespace cuda_loops {

// Threads per block of the per-channel kernels (a power of two).
inline constexpr int kChannelThreads = 256;

// REQUIRES: every thread of a block of kChannelThreads threads calls it
// (it synchronises the block); `shared` holds kChannelThreads doubles.
__device__ __forceinline__ double BlockSum(double value, double* shared) {
  shared[threadIdx.x] = value;
  __syncthreads();
  for (int half = kChannelThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) {
      shared[threadIdx.x] += shared[threadIdx.x + half];
    }
    __syncthreads();
  }
  const double total = shared[0];
  __syncthreads();  // shared may be reused by the next call
  return total;
}

}  // namespace cuda_loops
}  // namespace parex
