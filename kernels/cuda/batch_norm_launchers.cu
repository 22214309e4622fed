// Device kernels of batch_norm and batch_norm_grad. Each channel's elements
// are cut into BnChunks chunks, one block per (chunk, channel): a pass writes
// each block's sums in double to the scratch, and the next pass adds a
// channel's partials in chunk order (the same bits every run) before it
// walks its chunk again. Forward: sums, squared deviations from the mean,
// then the statistics and Y; gradient: the two sums, then the parameter
// gradients and X@GRAD. (One block per channel left a large GPU idle with
// the few channels of a small convnet: 20 blocks for 147456 elements each.)
#include <cmath>

#include "kernels/cuda/batch_norm_launchers.h"
#include "kernels/cuda/block_sum.cuh"
#include "kernels/cuda/grid_stride.cuh"

namespace parex {
namespace {

using cuda_loops::BlockSum;
using cuda_loops::kChannelThreads;
using cuda_loops::kMaxBlocks;

__device__ __forceinline__ double ReadScalar(DeviceScalar s) {
  return s.is_double ? *static_cast<const double*>(s.data)
                     : static_cast<double>(*static_cast<const float*>(s.data));
}

// Element j of channel c's chunk walk: its offset in X. 32-bit division
// where the channel's count allows it (the common case, and much cheaper).
__device__ __forceinline__ int64_t At(const BnView& v, int64_t c, int64_t j) {
  int64_t o, i;
  if (v.outer * v.inner <= 0x7fffffff) {
    const uint32_t inner = static_cast<uint32_t>(v.inner);
    const uint32_t jj = static_cast<uint32_t>(j);
    o = jj / inner;
    i = jj - static_cast<uint32_t>(o) * inner;
  } else {
    o = j / v.inner;
    i = j - o * v.inner;
  }
  return (o * v.channels + c) * v.inner + i;
}

// Chunk k of a channel's count elements: [*begin, *end).
__device__ __forceinline__ void ChunkRange(int64_t count, int chunks, int k,
                                           int64_t* begin, int64_t* end) {
  const int64_t per = (count + chunks - 1) / chunks;
  *begin = min(count, per * k);
  *end = min(count, *begin + per);
}

// The sum of a channel's chunk partials, in chunk order (the same bits
// every run), shared with the whole block.
__device__ __forceinline__ double ChunkTotal(const double* partials, int chunks,
                                             double* shared_total) {
  if (threadIdx.x == 0) {
    double total = 0;
    for (int k = 0; k < chunks; ++k) total += partials[k];
    *shared_total = total;
  }
  __syncthreads();
  const double total = *shared_total;
  __syncthreads();
  return total;
}

// Pass 1 of the forward op: each (chunk, channel) block's sum of X.
template <typename T>
__global__ void BnSumKernel(BnView v, const T* x, int chunks, double* sums) {
  __shared__ double shared[kChannelThreads];
  const int64_t count = v.outer * v.inner;
  int64_t begin, end;
  ChunkRange(count, chunks, blockIdx.x, &begin, &end);
  for (int64_t c = blockIdx.y; c < v.channels; c += gridDim.y) {
    double partial = 0;
    for (int64_t j = begin + threadIdx.x; j < end; j += kChannelThreads) {
      partial += static_cast<double>(x[At(v, c, j)]);
    }
    const double sum = BlockSum(partial, shared);
    if (threadIdx.x == 0) sums[c * chunks + blockIdx.x] = sum;
  }
}

// Pass 2: the channel's mean from pass 1, then each block's sum of squared
// deviations.
template <typename T>
__global__ void BnSquaresKernel(BnView v, const T* x, int chunks,
                                const double* sums, double* squares) {
  __shared__ double shared[kChannelThreads];
  __shared__ double total;
  const int64_t count = v.outer * v.inner;
  int64_t begin, end;
  ChunkRange(count, chunks, blockIdx.x, &begin, &end);
  for (int64_t c = blockIdx.y; c < v.channels; c += gridDim.y) {
    const double mean = ChunkTotal(sums + c * chunks, chunks, &total) /
                        static_cast<double>(count);
    double partial = 0;
    for (int64_t j = begin + threadIdx.x; j < end; j += kChannelThreads) {
      const double d = static_cast<double>(x[At(v, c, j)]) - mean;
      partial += d * d;
    }
    const double sq = BlockSum(partial, shared);
    if (threadIdx.x == 0) squares[c * chunks + blockIdx.x] = sq;
  }
}

// Pass 3 (the only one with global statistics): the channel's statistics,
// written by the first chunk's block, and Y over each block's chunk.
template <typename T>
__global__ void BnNormalizeKernel(BnView v, BnForwardTensors<T> t, bool global,
                                  double momentum, DeviceScalar momentum_tensor,
                                  double epsilon, int chunks,
                                  const double* sums, const double* squares) {
  __shared__ double total;
  const int64_t count = v.outer * v.inner;
  int64_t begin, end;
  ChunkRange(count, chunks, blockIdx.x, &begin, &end);
  for (int64_t c = blockIdx.y; c < v.channels; c += gridDim.y) {
    T saved_mean, saved_inv_std;
    double batch_mean = 0, batch_var = 0;
    if (global) {
      saved_mean = t.mean[c];
      saved_inv_std = static_cast<T>(
          1.0 / sqrt(static_cast<double>(t.variance[c]) + epsilon));
    } else {
      const double n = static_cast<double>(count);
      const double sum = ChunkTotal(sums + c * chunks, chunks, &total);
      const double sq = ChunkTotal(squares + c * chunks, chunks, &total);
      batch_mean = count > 0 ? sum / n : 0.0;
      batch_var = count > 0 ? sq / n : 0.0;
      saved_mean = static_cast<T>(batch_mean);
      saved_inv_std = static_cast<T>(1.0 / sqrt(batch_var + epsilon));
    }
    // Every thread of every block has read Mean / Variance (global) before
    // they may be overwritten in place: global writes the same values back,
    // and otherwise no block reads them after the first chunk's writes.
    __syncthreads();
    if (threadIdx.x == 0 && blockIdx.x == 0) {
      t.saved_mean[c] = saved_mean;
      t.saved_inv_std[c] = saved_inv_std;
      if (global) {
        t.mean_out[c] = t.mean[c];
        t.variance_out[c] = t.variance[c];
      } else {
        const double m = momentum_tensor.data != nullptr
                             ? ReadScalar(momentum_tensor)
                             : momentum;
        const double running_mean = static_cast<double>(t.mean[c]);
        const double running_var = static_cast<double>(t.variance[c]);
        t.mean_out[c] = static_cast<T>(m * running_mean + (1 - m) * batch_mean);
        t.variance_out[c] =
            static_cast<T>(m * running_var + (1 - m) * batch_var);
      }
    }
    const T a = saved_inv_std * t.scale[c];
    const T b = t.bias[c] - saved_mean * a;
    for (int64_t j = begin + threadIdx.x; j < end; j += kChannelThreads) {
      const int64_t e = At(v, c, j);
      t.y[e] = t.x[e] * a + b;
    }
  }
}

// mu and 1 / std of channel c for the gradient.
template <typename T>
__device__ __forceinline__ void GradStats(const BnGradTensors<T>& t,
                                          bool global, double epsilon,
                                          int64_t c, double* mu,
                                          double* inv_std) {
  if (global) {
    *mu = static_cast<double>(t.mean[c]);
    *inv_std = 1.0 / sqrt(static_cast<double>(t.variance[c]) + epsilon);
  } else {
    *mu = static_cast<double>(t.saved_mean[c]);
    *inv_std = static_cast<double>(t.saved_inv_std[c]);
  }
}

// Pass 1 of the gradient: each block's sums of dy and dy * (x - mu).
template <typename T>
__global__ void BnGradSumsKernel(BnView v, BnGradTensors<T> t, bool global,
                                 double epsilon, int chunks, double* sums_dy,
                                 double* sums_dy_xmu) {
  __shared__ double shared[kChannelThreads];
  const int64_t count = v.outer * v.inner;
  int64_t begin, end;
  ChunkRange(count, chunks, blockIdx.x, &begin, &end);
  for (int64_t c = blockIdx.y; c < v.channels; c += gridDim.y) {
    double mu, inv_std;
    GradStats(t, global, epsilon, c, &mu, &inv_std);
    double partial_dy = 0, partial_dy_xmu = 0;
    for (int64_t j = begin + threadIdx.x; j < end; j += kChannelThreads) {
      const int64_t e = At(v, c, j);
      const double dy = static_cast<double>(t.dy[e]);
      partial_dy += dy;
      partial_dy_xmu += dy * (static_cast<double>(t.x[e]) - mu);
    }
    const double sum_dy = BlockSum(partial_dy, shared);
    const double sum_dy_xmu = BlockSum(partial_dy_xmu, shared);
    if (threadIdx.x == 0) {
      sums_dy[c * chunks + blockIdx.x] = sum_dy;
      sums_dy_xmu[c * chunks + blockIdx.x] = sum_dy_xmu;
    }
  }
}

// Pass 2: the channel's totals (Scale@GRAD, Bias@GRAD from the first
// chunk's block), then X@GRAD over each block's chunk.
template <typename T>
__global__ void BnGradApplyKernel(BnView v, BnGradTensors<T> t, bool global,
                                  double epsilon, int chunks,
                                  const double* sums_dy,
                                  const double* sums_dy_xmu) {
  __shared__ double total;
  const int64_t count = v.outer * v.inner;
  int64_t begin, end;
  ChunkRange(count, chunks, blockIdx.x, &begin, &end);
  for (int64_t c = blockIdx.y; c < v.channels; c += gridDim.y) {
    double mu, inv_std;
    GradStats(t, global, epsilon, c, &mu, &inv_std);
    const double sum_dy = ChunkTotal(sums_dy + c * chunks, chunks, &total);
    const double sum_dy_xhat =
        ChunkTotal(sums_dy_xmu + c * chunks, chunks, &total) * inv_std;
    if (threadIdx.x == 0 && blockIdx.x == 0) {
      if (t.dbias != nullptr) t.dbias[c] = static_cast<T>(sum_dy);
      if (t.dscale != nullptr) t.dscale[c] = static_cast<T>(sum_dy_xhat);
    }
    if (t.dx == nullptr) continue;
    const double k = static_cast<double>(t.scale[c]) * inv_std;
    const double n = static_cast<double>(count);
    const double mean_dy = sum_dy / n, mean_dy_xhat = sum_dy_xhat / n;
    for (int64_t j = begin + threadIdx.x; j < end; j += kChannelThreads) {
      const int64_t e = At(v, c, j);
      const double dy = static_cast<double>(t.dy[e]);
      if (global) {
        t.dx[e] = static_cast<T>(k * dy);
      } else {
        const double x_hat = (static_cast<double>(t.x[e]) - mu) * inv_std;
        t.dx[e] = static_cast<T>(k * (dy - mean_dy - x_hat * mean_dy_xhat));
      }
    }
  }
}

dim3 Grid(const BnView& v) {
  return dim3(static_cast<unsigned>(BnChunks(v)),
              static_cast<unsigned>(std::min<int64_t>(v.channels, 65535)));
}

}  // namespace

int BnChunks(const BnView& v) {
  // About 4096 elements per block, and enough blocks (channels x chunks,
  // about 1024) to fill a large GPU when there are few channels; at most 256
  // partials per channel (one thread sums them, in order).
  const int64_t count = v.outer * v.inner;
  const int64_t by_size = (count + 4095) / 4096;
  const int64_t by_blocks =
      (1024 + v.channels - 1) / std::max<int64_t>(v.channels, 1);
  return static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>({by_size, by_blocks, 256})));
}

int64_t BnScratchDoubles(const BnView& v) {
  return 2 * std::max<int64_t>(v.channels, 0) * BnChunks(v);
}

template <typename T>
cudaError_t LaunchBatchNorm(const BnView& view, const BnForwardTensors<T>& t,
                            bool global, double momentum,
                            DeviceScalar momentum_tensor, double epsilon,
                            double* scratch, cudaStream_t stream) {
  if (view.channels <= 0) return cudaSuccess;
  const int chunks = BnChunks(view);
  const dim3 grid = Grid(view);
  double* sums = scratch;
  double* squares = scratch + view.channels * chunks;
  if (!global) {
    BnSumKernel<T>
        <<<grid, kChannelThreads, 0, stream>>>(view, t.x, chunks, sums);
    BnSquaresKernel<T><<<grid, kChannelThreads, 0, stream>>>(view, t.x, chunks,
                                                             sums, squares);
  }
  BnNormalizeKernel<T><<<grid, kChannelThreads, 0, stream>>>(
      view, t, global, momentum, momentum_tensor, epsilon, chunks, sums,
      squares);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchBatchNormGrad(const BnView& view, const BnGradTensors<T>& t,
                                bool global, double epsilon, double* scratch,
                                cudaStream_t stream) {
  if (view.channels <= 0) return cudaSuccess;
  const int chunks = BnChunks(view);
  const dim3 grid = Grid(view);
  double* sums_dy = scratch;
  double* sums_dy_xmu = scratch + view.channels * chunks;
  BnGradSumsKernel<T><<<grid, kChannelThreads, 0, stream>>>(
      view, t, global, epsilon, chunks, sums_dy, sums_dy_xmu);
  BnGradApplyKernel<T><<<grid, kChannelThreads, 0, stream>>>(
      view, t, global, epsilon, chunks, sums_dy, sums_dy_xmu);
  return cudaGetLastError();
}

#define PAREX_INSTANTIATE_BATCH_NORM(T)                                      \
  template cudaError_t LaunchBatchNorm<T>(                                   \
      const BnView&, const BnForwardTensors<T>&, bool, double, DeviceScalar, \
      double, double*, cudaStream_t);                                        \
  template cudaError_t LaunchBatchNormGrad<T>(const BnView&,                 \
                                              const BnGradTensors<T>&, bool, \
                                              double, double*, cudaStream_t);
PAREX_INSTANTIATE_BATCH_NORM(float)
PAREX_INSTANTIATE_BATCH_NORM(double)
#undef PAREX_INSTANTIATE_BATCH_NORM

}  // namespace parex
