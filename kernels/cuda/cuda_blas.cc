#include "kernels/cuda/cuda_blas.h"

#include <climits>
#include <string>

#include "kernels/cuda/cuda_status.h"

namespace parex {
namespace {

cublasStatus_t GemmStridedBatched(cublasHandle_t handle, cublasOperation_t ta,
                                  cublasOperation_t tb, int m, int n, int k,
                                  const float* alpha, const float* a, int lda,
                                  long long stride_a, const float* b, int ldb,
                                  long long stride_b, const float* beta,
                                  float* c, int ldc, long long stride_c,
                                  int batch) {
  return cublasSgemmStridedBatched(handle, ta, tb, m, n, k, alpha, a, lda,
                                   stride_a, b, ldb, stride_b, beta, c, ldc,
                                   stride_c, batch);
}

cublasStatus_t GemmStridedBatched(cublasHandle_t handle, cublasOperation_t ta,
                                  cublasOperation_t tb, int m, int n, int k,
                                  const double* alpha, const double* a, int lda,
                                  long long stride_a, const double* b, int ldb,
                                  long long stride_b, const double* beta,
                                  double* c, int ldc, long long stride_c,
                                  int batch) {
  return cublasDgemmStridedBatched(handle, ta, tb, m, n, k, alpha, a, lda,
                                   stride_a, b, ldb, stride_b, beta, c, ldc,
                                   stride_c, batch);
}

bool FitsInt(int64_t v) { return v >= 0 && v <= INT_MAX; }

}  // namespace

template <typename T>
Status CudaGemm(const CudaDeviceContext& context, bool trans_a, bool trans_b,
                int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                int64_t lda, int64_t stride_a, const T* b, int64_t ldb,
                int64_t stride_b, T beta, T* c, int64_t ldc, int64_t stride_c,
                int64_t batch) {
  if (m == 0 || n == 0 || batch == 0) return Status::Ok();
  if (!FitsInt(m) || !FitsInt(n) || !FitsInt(k) || !FitsInt(lda) ||
      !FitsInt(ldb) || !FitsInt(ldc) || !FitsInt(batch)) {
    return Unimplemented(
        "GEMM extents beyond cuBLAS's int range: m=" + std::to_string(m) +
        " n=" + std::to_string(n) + " k=" + std::to_string(k) +
        " batch=" + std::to_string(batch));
  }
  if (k == 0) {
    // An empty sum: C = beta * C. Only beta == 0 on packed C is needed (op
    // kernels overwrite their outputs).
    if (beta != T(0) || ldc != n || (batch > 1 && stride_c != m * n)) {
      return Unimplemented("GEMM with k=0 needs beta=0 and a packed C");
    }
    PAREX_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(c, 0, static_cast<size_t>(batch * m * n) * sizeof(T),
                        context.stream()));
    return Status::Ok();
  }
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the
  // row-major buffers are already the column-major transposes.
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  PAREX_CUBLAS_RETURN_IF_ERROR(GemmStridedBatched(
      context.cublas(), op_b, op_a, static_cast<int>(n), static_cast<int>(m),
      static_cast<int>(k), &alpha, b, static_cast<int>(ldb), stride_b, a,
      static_cast<int>(lda), stride_a, &beta, c, static_cast<int>(ldc),
      stride_c, static_cast<int>(batch)));
  return Status::Ok();
}

template Status CudaGemm<float>(const CudaDeviceContext&, bool, bool, int64_t,
                                int64_t, int64_t, float, const float*, int64_t,
                                int64_t, const float*, int64_t, int64_t, float,
                                float*, int64_t, int64_t, int64_t);
template Status CudaGemm<double>(const CudaDeviceContext&, bool, bool, int64_t,
                                 int64_t, int64_t, double, const double*,
                                 int64_t, int64_t, const double*, int64_t,
                                 int64_t, double, double*, int64_t, int64_t,
                                 int64_t);

}  // namespace parex
