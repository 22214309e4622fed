// GEMM for CPU kernels: fp32 through oneDNN's sgemm where parex is built
// with it (OpenBLAS for tiny products), fp64 through OpenBLAS's CBLAS; one
// thread inside a kernel (parallelism belongs to the executor).
#pragma once

#include <cstdint>

namespace parex::cpu {

// The threads a oneDNN call (convolution, GEMM) may use on the calling
// thread's OpenMP team: 1 unless set (the executor's places are the
// parallelism); more where a run has fewer places busy than cores to fill
// (parex infer on a batch of fewer rows than places). Process-wide.
void SetIntraOpThreads(int threads);
int IntraOpThreads();
// Makes the calling thread's OpenMP team IntraOpThreads() wide; called
// before each oneDNN primitive is made or run.
void UseIntraOpThreads();

// C[m,n] = alpha * op(A) * op(B) + beta * C, row-major; op transposes when
// the flag is set. lda/ldb/ldc are the row strides of A, B and C as stored.
template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
          const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c,
          int64_t ldc);

}  // namespace parex::cpu
