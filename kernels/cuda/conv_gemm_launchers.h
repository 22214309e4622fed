// Device launchers of the convolution gradients computed as GEMMs
// (conv_gemm_grad.h): im2col, its adjoint col2im, and the move of the output
// gradient from sample-major to channel-major. Defined in
// conv_gemm_launchers.cu for T = float and double. As in cuda_launchers.h:
// work is queued on `stream`, the launch status returned; pointers are
// device memory.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace parex {

// One sample's convolution geometry (NCHW, one group): input [c, h, w],
// filter windows [kh, kw] at pad_h / pad_w before (past the end the input is
// zero as well), output [oh, ow].
struct Im2ColShape {
  int64_t c = 0, h = 0, w = 0, kh = 0, kw = 0, oh = 0, ow = 0;
  int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;

  int64_t Rows() const { return c * kh * kw; }  // Q
  int64_t Plane() const { return oh * ow; }     // P
};

// col [Q, nb * P]: col[(ci, i, j), (s, y, x)] = x[n0 + s][ci][y * stride_h -
// pad_h + i * dilation_h][x * stride_w - pad_w + j * dilation_w], 0 outside.
// x is [n, c, h, w].
template <typename T>
cudaError_t LaunchIm2Col(const T* x, const Im2ColShape& s, int64_t n0,
                         int64_t nb, T* col, cudaStream_t stream);

// The adjoint: dx[n0 + s][ci][yy][xx] = the sum, in (i, j) order, of the
// col entries im2col reads that element into; every element of samples
// n0 .. n0 + nb - 1 of dx is written.
template <typename T>
cudaError_t LaunchCol2Im(const T* col, const Im2ColShape& s, int64_t n0,
                         int64_t nb, T* dx, cudaStream_t stream);

// out [m, nb, plane] = dout[n0 + s][c][p] for dout [n, m, plane].
template <typename T>
cudaError_t LaunchChannelMajor(const T* dout, int64_t n0, int64_t nb, int64_t m,
                               int64_t plane, T* out, cudaStream_t stream);

}  // namespace parex
