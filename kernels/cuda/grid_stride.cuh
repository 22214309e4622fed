// Grid-stride loops for parex's device kernels: a bounded grid of 256-thread
// blocks walks any element count with 64-bit indices. Device code only
// (included by .cu files).
#pragma once

#include <algorithm>
#include <cstdint>

namespace parex {
namespace cuda_loops {

inline constexpr int kThreads = 256;
inline constexpr int64_t kMaxBlocks = 65535;

// Blocks of kThreads for n elements (at least 1, so a launch of an empty
// range is still valid; kernels loop zero times).
inline int BlocksFor(int64_t n) {
  return static_cast<int>(std::max<int64_t>(
      1, std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks)));
}

__device__ __forceinline__ int64_t FirstIndex() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t GridStride() {
  return static_cast<int64_t>(blockDim.x) * gridDim.x;
}

}  // namespace cuda_loops
}  // namespace parex
