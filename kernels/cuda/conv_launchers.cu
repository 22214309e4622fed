// Device kernels around the cuDNN convolutions: explicit padding and its
// inverse (for asymmetric paddings), the per-channel bias (and residual) of
// conv2d's fused form, and the bias gradient.
#include "kernels/cuda/block_sum.cuh"
#include "kernels/cuda/grid_stride.cuh"
#include "kernels/cuda/spatial_launchers.h"

namespace parex {
namespace {

using cuda_loops::BlocksFor;
using cuda_loops::BlockSum;
using cuda_loops::FirstIndex;
using cuda_loops::GridStride;
using cuda_loops::kChannelThreads;
using cuda_loops::kMaxBlocks;
using cuda_loops::kThreads;

template <typename T>
__global__ void PadPlanesKernel(const T* x, int64_t h, int64_t w, int64_t top,
                                int64_t left, int64_t padded_h,
                                int64_t padded_w, T* padded, int64_t total) {
  const int64_t plane = padded_h * padded_w;
  for (int64_t e = FirstIndex(); e < total; e += GridStride()) {
    const int64_t p = e / plane, r = e % plane;
    const int64_t y = r / padded_w - top, xx = r % padded_w - left;
    const bool inside = y >= 0 && y < h && xx >= 0 && xx < w;
    padded[e] = inside ? x[(p * h + y) * w + xx] : T(0);
  }
}

template <typename T>
__global__ void CropPlanesKernel(const T* padded, int64_t padded_h,
                                 int64_t padded_w, int64_t top, int64_t left,
                                 int64_t h, int64_t w, T* x, int64_t total) {
  const int64_t plane = h * w;
  for (int64_t e = FirstIndex(); e < total; e += GridStride()) {
    const int64_t p = e / plane, r = e % plane;
    const int64_t y = r / w + top, xx = r % w + left;
    x[e] = padded[(p * padded_h + y) * padded_w + xx];
  }
}

template <typename T>
__global__ void AddChannelBiasKernel(T* out, const T* bias, const T* residual,
                                     int64_t channels, int64_t plane,
                                     int64_t total) {
  for (int64_t e = FirstIndex(); e < total; e += GridStride()) {
    T v = out[e];
    if (bias != nullptr) v += bias[(e / plane) % channels];
    if (residual != nullptr) v += residual[e];
    out[e] = v;
  }
}

// One block per channel (striding over channels past the grid).
template <typename T>
__global__ void ChannelSumsKernel(const T* x, int64_t n, int64_t channels,
                                  int64_t plane, T* sums) {
  __shared__ double shared[kChannelThreads];
  const int64_t count = n * plane;
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    double partial = 0;
    for (int64_t j = threadIdx.x; j < count; j += kChannelThreads) {
      const int64_t i = j / plane;
      partial += static_cast<double>(x[(i * channels + c) * plane + j % plane]);
    }
    const double total = BlockSum(partial, shared);
    if (threadIdx.x == 0) sums[c] = static_cast<T>(total);
  }
}

int ChannelBlocks(int64_t channels) {
  return static_cast<int>(std::min<int64_t>(channels, kMaxBlocks));
}

}  // namespace

template <typename T>
cudaError_t LaunchPadPlanes(const T* x, int64_t planes, int64_t h, int64_t w,
                            int64_t top, int64_t left, int64_t padded_h,
                            int64_t padded_w, T* padded, cudaStream_t stream) {
  const int64_t total = planes * padded_h * padded_w;
  if (total <= 0) return cudaSuccess;
  PadPlanesKernel<T><<<BlocksFor(total), kThreads, 0, stream>>>(
      x, h, w, top, left, padded_h, padded_w, padded, total);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchCropPlanes(const T* padded, int64_t planes, int64_t padded_h,
                             int64_t padded_w, int64_t top, int64_t left,
                             int64_t h, int64_t w, T* x, cudaStream_t stream) {
  const int64_t total = planes * h * w;
  if (total <= 0) return cudaSuccess;
  CropPlanesKernel<T><<<BlocksFor(total), kThreads, 0, stream>>>(
      padded, padded_h, padded_w, top, left, h, w, x, total);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchAddChannelBias(T* out, const T* bias, const T* residual,
                                 int64_t n, int64_t channels, int64_t plane,
                                 cudaStream_t stream) {
  const int64_t total = n * channels * plane;
  if (total <= 0 || (bias == nullptr && residual == nullptr)) {
    return cudaSuccess;
  }
  AddChannelBiasKernel<T><<<BlocksFor(total), kThreads, 0, stream>>>(
      out, bias, residual, channels, plane, total);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchChannelSums(const T* x, int64_t n, int64_t channels,
                              int64_t plane, T* sums, cudaStream_t stream) {
  if (channels <= 0) return cudaSuccess;
  ChannelSumsKernel<T><<<ChannelBlocks(channels), kChannelThreads, 0, stream>>>(
      x, n, channels, plane, sums);
  return cudaGetLastError();
}

#define PAREX_INSTANTIATE_CONV_HELPERS(T)                                      \
  template cudaError_t LaunchPadPlanes<T>(const T*, int64_t, int64_t, int64_t, \
                                          int64_t, int64_t, int64_t, int64_t,  \
                                          T*, cudaStream_t);                   \
  template cudaError_t LaunchCropPlanes<T>(const T*, int64_t, int64_t,         \
                                           int64_t, int64_t, int64_t, int64_t, \
                                           int64_t, T*, cudaStream_t);         \
  template cudaError_t LaunchAddChannelBias<T>(                                \
      T*, const T*, const T*, int64_t, int64_t, int64_t, cudaStream_t);        \
  template cudaError_t LaunchChannelSums<T>(const T*, int64_t, int64_t,        \
                                            int64_t, T*, cudaStream_t);
PAREX_INSTANTIATE_CONV_HELPERS(float)
PAREX_INSTANTIATE_CONV_HELPERS(double)
#undef PAREX_INSTANTIATE_CONV_HELPERS

}  // namespace parex
