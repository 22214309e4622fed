// Device launchers of the convnet ops' own kernels (the convolutions
// themselves run in cuDNN, cudnn_conv.h): pooling with Fluid's window rules,
// the explicit padding cuDNN's symmetric pads cannot express, and the
// convolution's bias and its gradient. Defined in pool_launchers.cu and
// conv_launchers.cu for T = float and double.
//
// As in cuda_launchers.h: every launcher queues its work on `stream`, returns
// the launch status and launches nothing for an empty range; pointers are
// device memory of the stream's device; planes are row-major [h, w].
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace parex {

// ---- pool2d ----
// One spatial dim of a pooling, resolved on the host as the CPU kernel
// resolves it (kernels/cpu/spatial/pool2d_kernel.cc): global pooling has
// size = in, stride 1 and no padding; adaptive pooling uses only in and out.
struct PoolDim {
  int64_t in = 0, out = 0, size = 1, stride = 1, pad_before = 0;
};

// Output position o reads the input range [begin, end): adaptive windows are
// [floor(o*in/out), ceil((o+1)*in/out)); others start at
// o*stride - pad_before, end at min(start + size, in + pad_before), and are
// clipped to [0, in). An average divides by the clipped extent (exclusive)
// or the extent before clipping.
struct PoolArgs {
  int64_t planes = 0;  // N * C
  PoolDim h, w;
  bool max = true;
  bool exclusive = true;
  bool adaptive = false;
};

// out = the max (folded from the lowest finite value, NaNs skipped as
// std::max skips them) or the average of each window; for a window wholly
// in the padding -FLT_MAX (max) or 0 (avg), as Paddle. x: [planes, h.in, w.in];
// out: [planes, h.out, w.out].
template <typename T>
cudaError_t LaunchPool2d(const PoolArgs& args, const T* x, T* out,
                         cudaStream_t stream);

// dx = the sum over the windows containing each input, in row-major order of
// the outputs, of: max, dout when the input is the window's first (row-major)
// element equal to out; avg, dout / divisor. Writes every element of dx.
template <typename T>
cudaError_t LaunchPool2dGrad(const PoolArgs& args, const T* x, const T* out,
                             const T* dout, T* dx, cudaStream_t stream);

// ---- convolution helpers ----
// padded[p][y][x] = x[p][y - top][x - left] where that is inside the
// [h, w] plane, else 0; padded is [planes, padded_h, padded_w].
template <typename T>
cudaError_t LaunchPadPlanes(const T* x, int64_t planes, int64_t h, int64_t w,
                            int64_t top, int64_t left, int64_t padded_h,
                            int64_t padded_w, T* padded, cudaStream_t stream);

// x[p][y][x] = padded[p][y + top][x + left] for the [h, w] plane x.
template <typename T>
cudaError_t LaunchCropPlanes(const T* padded, int64_t planes, int64_t padded_h,
                             int64_t padded_w, int64_t top, int64_t left,
                             int64_t h, int64_t w, T* x, cudaStream_t stream);

// out viewed as [n, channels, plane]: out = (out + bias[c]) + residual, either
// addend skipped when null (the CPU kernel's order).
template <typename T>
cudaError_t LaunchAddChannelBias(T* out, const T* bias, const T* residual,
                                 int64_t n, int64_t channels, int64_t plane,
                                 cudaStream_t stream);

// sums[c] = the sum of x[n][c][i] over n and i (accumulated in double), x
// viewed as [n, channels, plane]: the gradient of a per-channel bias.
template <typename T>
cudaError_t LaunchChannelSums(const T* x, int64_t n, int64_t channels,
                              int64_t plane, T* sums, cudaStream_t stream);

}  // namespace parex
