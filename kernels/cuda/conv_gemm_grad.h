// The gradients of a one-group convolution (NCHW) as GEMMs on cuBLAS, for
// conv2d_grad: cuDNN's exact, deterministic filter-gradient algorithm (its
// only one; the others add with atomics) took 316 us per call on the Fashion
// CNN's layers on an H200, where these take a few tens. Samples are taken in
// chunks so that the columns stay near kChunkElements:
//   dY_c = Output@GRAD of the chunk as [M, nb*P] (channel-major),
//   Filter@GRAD [M, Q]  = sum over chunks of dY_c * im2col(X_c)^T
//                         (the first chunk writes, the later ones add),
//   Input@GRAD of the chunk = col2im(W^T [Q, M] * dY_c).
// Everything is queued on `cuda`'s stream in a fixed order: the same bits
// every run.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/cuda/conv_gemm_launchers.h"
#include "kernels/cuda/cuda_device_context.h"

namespace parex {

inline constexpr int64_t kConvGemmChunkElements = int64_t{16} << 20;

// Samples per chunk, and the scratch (elements of T) GemmConvGrad needs.
int64_t ConvGemmChunk(const Im2ColShape& s, int64_t n, int64_t m);
int64_t ConvGemmScratchElements(const Im2ColShape& s, int64_t n, int64_t m);

// dx (may be null): [n, c, h, w]; dw (may be null): [m, c, kh, kw];
// scratch: ConvGemmScratchElements elements.
template <typename T>
Status GemmConvGrad(const CudaDeviceContext& cuda, const Im2ColShape& s,
                    int64_t n, int64_t m, const T* x, const T* w, const T* dout,
                    T* dx, T* dw, T* scratch);

}  // namespace parex
