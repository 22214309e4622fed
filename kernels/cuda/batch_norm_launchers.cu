// Device kernels of batch_norm and batch_norm_grad: one block per channel
// (striding over channels past the grid) sums the channel's elements in
// double (BlockSum), writes the per-channel outputs from thread 0 and then
// walks the channel once more for Y or X@GRAD.
#include <cmath>

#include "kernels/cuda/batch_norm_launchers.h"
#include "kernels/cuda/block_sum.cuh"
#include "kernels/cuda/grid_stride.cuh"

namespace parex {
namespace {

using cuda_loops::BlockSum;
using cuda_loops::kChannelThreads;
using cuda_loops::kMaxBlocks;

// The offset of element j (of outer * inner) of channel c.
__device__ __forceinline__ int64_t At(const BnView& v, int64_t c, int64_t j) {
  const int64_t o = j / v.inner;
  return (o * v.channels + c) * v.inner + (j - o * v.inner);
}

__device__ __forceinline__ double ReadScalar(DeviceScalar s) {
  return s.is_double ? *static_cast<const double*>(s.data)
                     : static_cast<double>(*static_cast<const float*>(s.data));
}

template <typename T>
__global__ void BatchNormKernel(BnView v, BnForwardTensors<T> t, bool global,
                                double momentum, DeviceScalar momentum_tensor,
                                double epsilon) {
  __shared__ double shared[kChannelThreads];
  const int64_t count = v.outer * v.inner;
  for (int64_t c = blockIdx.x; c < v.channels; c += gridDim.x) {
    T saved_mean, saved_inv_std;
    double batch_mean = 0, batch_var = 0;
    if (global) {
      saved_mean = t.mean[c];
      saved_inv_std = static_cast<T>(
          1.0 / sqrt(static_cast<double>(t.variance[c]) + epsilon));
    } else {
      double partial = 0;
      for (int64_t j = threadIdx.x; j < count; j += kChannelThreads) {
        partial += static_cast<double>(t.x[At(v, c, j)]);
      }
      const double n = static_cast<double>(count);
      const double sum = BlockSum(partial, shared);
      batch_mean = count > 0 ? sum / n : 0.0;
      partial = 0;
      for (int64_t j = threadIdx.x; j < count; j += kChannelThreads) {
        const double d = static_cast<double>(t.x[At(v, c, j)]) - batch_mean;
        partial += d * d;
      }
      const double sq = BlockSum(partial, shared);
      batch_var = count > 0 ? sq / n : 0.0;
      saved_mean = static_cast<T>(batch_mean);
      saved_inv_std = static_cast<T>(1.0 / sqrt(batch_var + epsilon));
    }
    // Every thread has read Mean / Variance (global) before thread 0 may
    // overwrite them in place.
    __syncthreads();
    if (threadIdx.x == 0) {
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
    for (int64_t j = threadIdx.x; j < count; j += kChannelThreads) {
      const int64_t e = At(v, c, j);
      t.y[e] = t.x[e] * a + b;
    }
  }
}

template <typename T>
__global__ void BatchNormGradKernel(BnView v, BnGradTensors<T> t, bool global,
                                    double epsilon) {
  __shared__ double shared[kChannelThreads];
  const int64_t count = v.outer * v.inner;
  for (int64_t c = blockIdx.x; c < v.channels; c += gridDim.x) {
    double mu, inv_std;
    if (global) {
      mu = static_cast<double>(t.mean[c]);
      inv_std = 1.0 / sqrt(static_cast<double>(t.variance[c]) + epsilon);
    } else {
      mu = static_cast<double>(t.saved_mean[c]);
      inv_std = static_cast<double>(t.saved_inv_std[c]);
    }
    double partial_dy = 0, partial_dy_xmu = 0;
    for (int64_t j = threadIdx.x; j < count; j += kChannelThreads) {
      const int64_t e = At(v, c, j);
      const double dy = static_cast<double>(t.dy[e]);
      partial_dy += dy;
      partial_dy_xmu += dy * (static_cast<double>(t.x[e]) - mu);
    }
    const double sum_dy = BlockSum(partial_dy, shared);
    const double sum_dy_xhat = BlockSum(partial_dy_xmu, shared) * inv_std;
    if (threadIdx.x == 0) {
      if (t.dbias != nullptr) t.dbias[c] = static_cast<T>(sum_dy);
      if (t.dscale != nullptr) t.dscale[c] = static_cast<T>(sum_dy_xhat);
    }
    if (t.dx == nullptr) continue;
    const double k = static_cast<double>(t.scale[c]) * inv_std;
    const double n = static_cast<double>(count);
    const double mean_dy = sum_dy / n, mean_dy_xhat = sum_dy_xhat / n;
    for (int64_t j = threadIdx.x; j < count; j += kChannelThreads) {
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

int ChannelBlocks(int64_t channels) {
  return static_cast<int>(std::min<int64_t>(channels, kMaxBlocks));
}

}  // namespace

template <typename T>
cudaError_t LaunchBatchNorm(const BnView& view, const BnForwardTensors<T>& t,
                            bool global, double momentum,
                            DeviceScalar momentum_tensor, double epsilon,
                            cudaStream_t stream) {
  if (view.channels <= 0) return cudaSuccess;
  BatchNormKernel<T>
      <<<ChannelBlocks(view.channels), kChannelThreads, 0, stream>>>(
          view, t, global, momentum, momentum_tensor, epsilon);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchBatchNormGrad(const BnView& view, const BnGradTensors<T>& t,
                                bool global, double epsilon,
                                cudaStream_t stream) {
  if (view.channels <= 0) return cudaSuccess;
  BatchNormGradKernel<T>
      <<<ChannelBlocks(view.channels), kChannelThreads, 0, stream>>>(
          view, t, global, epsilon);
  return cudaGetLastError();
}

#define PAREX_INSTANTIATE_BATCH_NORM(T)                                      \
  template cudaError_t LaunchBatchNorm<T>(                                   \
      const BnView&, const BnForwardTensors<T>&, bool, double, DeviceScalar, \
      double, cudaStream_t);                                                 \
  template cudaError_t LaunchBatchNormGrad<T>(                               \
      const BnView&, const BnGradTensors<T>&, bool, double, cudaStream_t);
PAREX_INSTANTIATE_BATCH_NORM(float)
PAREX_INSTANTIATE_BATCH_NORM(double)
#undef PAREX_INSTANTIATE_BATCH_NORM

}  // namespace parex
