#include "kernels/cpu/blas.h"

#include <cblas.h>

#include <atomic>
#include <mutex>
#include <thread>

#ifdef PAREX_WITH_DNNL
#include "oneapi/dnnl/dnnl.h"

// libdnnl runs on OpenMP (libgomp); see SingleThreadedDnnl.
extern "C" void omp_set_num_threads(int num_threads);
extern "C" int omp_get_max_threads(void);
#endif

// Ends the pthread build's worker pool (OpenBLAS calls it before a fork);
// weak, as builds without that pool (serial, OpenMP) need not have it.
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

namespace parex::cpu {
namespace {

std::atomic<int> g_intra_op_threads{1};

#ifdef PAREX_WITH_DNNL

// Below this many multiply-adds OpenBLAS's lighter entry wins (an 8x8x8
// product: 0.1 us against oneDNN's 0.3); above it oneDNN's JIT sgemm is
// faster on every shape parex's models produce, most on thin inner
// dimensions (a 784x256 weight gradient over 32 rows: 154 us against 215).
constexpr int64_t kDnnlMinWork = 16 * 1024;
#endif

}  // namespace

void SingleThreadedOpenBlas() {
  static std::once_flag once;
  std::call_once(once, [] {
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_ != nullptr) blas_thread_shutdown_();
  });
}

void SetIntraOpThreads(int threads) {
  g_intra_op_threads.store(threads < 1 ? 1 : threads,
                           std::memory_order_relaxed);
}

int IntraOpThreads() {
  return g_intra_op_threads.load(std::memory_order_relaxed);
}

// OpenMP's thread count is per calling thread: each executor worker sets
// it when it differs from what the thread last applied. Only one thread at a
// time runs OpenMP teams wider than one: libgomp keeps a team's threads per
// calling thread, and once the process has more of them than cores each
// waiting thread spins only ~100 times before it sleeps (its "throttled"
// spin), so every parallel region pays a futex wake-up: 45 us a region on a
// 2-core VM against 0.5 us with one team (a second team made parex infer at
// batch 1 nine times slower). The first thread to ask holds the claim until
// it exits.
#ifdef PAREX_WITH_DNNL
namespace {

std::atomic<std::thread::id> g_team_owner{std::thread::id()};

bool HoldsWideTeams() {
  struct Claim {
    bool held = false;
    ~Claim() {
      if (held)
        g_team_owner.store(std::thread::id(), std::memory_order_release);
    }
  };
  thread_local Claim claim;
  if (!claim.held &&
      g_team_owner.load(std::memory_order_relaxed) == std::thread::id()) {
    std::thread::id none;
    claim.held = g_team_owner.compare_exchange_strong(
        none, std::this_thread::get_id(), std::memory_order_acq_rel);
  }
  return claim.held;
}

}  // namespace
#endif

void UseIntraOpThreads() {
#ifdef PAREX_WITH_DNNL
  thread_local int applied = 0;
  int want = IntraOpThreads();
  if (want > 1 && !HoldsWideTeams()) want = 1;
  if (applied != want) {
    omp_set_num_threads(want);
    applied = want;
  }
#endif
}

int TeamWidth() {
#ifdef PAREX_WITH_DNNL
  return omp_get_max_threads();
#else
  return 1;
#endif
}

template <>
void Gemm<float>(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                 float alpha, const float* a, int64_t lda, const float* b,
                 int64_t ldb, float beta, float* c, int64_t ldc) {
#ifdef PAREX_WITH_DNNL
  if (m * n * k >= kDnnlMinWork) {
    UseIntraOpThreads();
    // Row-major like the call below; it fails only on bad arguments, which
    // the callers' shapes rule out, so a failure falls through to OpenBLAS.
    if (dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a,
                   lda, b, ldb, beta, c, ldc) == dnnl_success) {
      return;
    }
  }
#endif
  SingleThreadedOpenBlas();
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, c, ldc);
}

template <>
void Gemm<double>(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                  double alpha, const double* a, int64_t lda, const double* b,
                  int64_t ldb, double beta, double* c, int64_t ldc) {
  SingleThreadedOpenBlas();
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, c, ldc);
}

}  // namespace parex::cpu
