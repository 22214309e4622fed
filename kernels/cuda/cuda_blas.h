// GEMM for CUDA kernels through cuBLAS, in parex's row-major layout.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/cuda/cuda_device_context.h"

namespace parex {

// For b in [0, batch):
//   C_b[m,n] = alpha * op(A_b) * op(B_b) + beta * C_b
// with X_b = x + b * stride_x (stride 0 reuses one matrix for every b),
// row-major; op transposes when the flag is set; lda/ldb/ldc are the row
// strides of A, B and C as stored. Queued on `context`'s stream with its
// cuBLAS handle. cuBLAS is column-major, so this computes C^T = op(B)^T op(A)^T
// by passing B before A.
// REQUIRES: `context` is active on the calling thread; the pointers are on
// its device. Errors: extents that do not fit cuBLAS's int arguments.
// T: float, double.
template <typename T>
Status CudaGemm(const CudaDeviceContext& context, bool trans_a, bool trans_b,
                int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                int64_t lda, int64_t stride_a, const T* b, int64_t ldb,
                int64_t stride_b, T beta, T* c, int64_t ldc, int64_t stride_c,
                int64_t batch);

}  // namespace parex
