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
// before each oneDNN primitive is made or run. One thread at a time runs
// teams wider than one: the first to ask, until it exits (blas.cc says why);
// the others run theirs on one thread.
void UseIntraOpThreads();
// How wide the calling thread's OpenMP teams are now (1 without oneDNN).
int TeamWidth();

// OpenBLAS on one thread, its own worker pool ended (once per process;
// RegisterCpuKernels calls it, Gemm too). The pthread build starts the pool
// when the library loads, and each idle worker polls for work about 0.1 s
// before it sleeps: on a 2-core machine that spell took a core from a
// run's first steps (parex infer's first ~200 batch-1 runs of a small
// convnet). parex never asks OpenBLAS for threads.
void SingleThreadedOpenBlas();

// C[m,n] = alpha * op(A) * op(B) + beta * C, row-major; op transposes when
// the flag is set. lda/ldb/ldc are the row strides of A, B and C as stored.
template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
          const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c,
          int64_t ldc);

}  // namespace parex::cpu
