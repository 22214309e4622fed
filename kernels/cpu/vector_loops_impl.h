// The bodies of vector_loops.h, included by one source file per instruction
// set inside namespace PAREX_VECTOR_LOOPS_NS (vector_loops.cc,
// vector_loops_avx2.cc), each compiled with its own target flags.
#ifndef PAREX_VECTOR_LOOPS_NS
#error "define PAREX_VECTOR_LOOPS_NS before including vector_loops_impl.h"
#endif

#include <algorithm>
#include <cmath>

#include "kernels/cpu/vector_loops.h"

namespace parex::cpu::PAREX_VECTOR_LOOPS_NS {

template <typename T>
void AdamLoopImpl(const AdamLoopArgs<T>& a) {
  const T b1 = a.beta1, b2 = a.beta2, lr_t = a.lr_t, eps_t = a.eps_t;
  const T *p = a.param, *grad = a.grad, *m1 = a.m1, *m2 = a.m2;
  T *p_out = a.param_out, *m1_out = a.m1_out, *m2_out = a.m2_out;
#pragma GCC ivdep  // in place or disjoint: element i touches index i only
  for (int64_t i = 0; i < a.n; ++i) {
    const T g = grad[i];
    const T m = b1 * m1[i] + (T(1) - b1) * g;
    const T v = b2 * m2[i] + (T(1) - b2) * g * g;
    m1_out[i] = m;
    m2_out[i] = v;
    p_out[i] = p[i] - lr_t * (m / (std::sqrt(v) + eps_t));
  }
}

// With addends: the gradient summed a block at a time into a buffer that
// stays in L1, then the update over the block, so each array is read once.
template <typename T>
void AdamSumLoopImpl(const AdamLoopArgs<T>& a) {
  constexpr int64_t kBlock = 512;
  T sum[kBlock];
  for (int64_t begin = 0; begin < a.n; begin += kBlock) {
    const int64_t count = std::min(kBlock, a.n - begin);
    const T* grad = a.grad + begin;
    for (int64_t i = 0; i < count; ++i) sum[i] = grad[i];
    for (int k = 0; k < a.num_addends; ++k) {
      const T* add = a.addends[k] + begin;
      for (int64_t i = 0; i < count; ++i) sum[i] += add[i];
    }
    AdamLoopArgs<T> block = a;
    block.n = count;
    block.param = a.param + begin;
    block.grad = sum;
    block.m1 = a.m1 + begin;
    block.m2 = a.m2 + begin;
    block.param_out = a.param_out + begin;
    block.m1_out = a.m1_out + begin;
    block.m2_out = a.m2_out + begin;
    AdamLoopImpl(block);
  }
}

template <typename T>
void AdamAny(const AdamLoopArgs<T>& a) {
  if (a.num_addends > 0) {
    AdamSumLoopImpl(a);
  } else {
    AdamLoopImpl(a);
  }
}

void Adam(const AdamLoopArgs<float>& a) { AdamAny(a); }
void Adam(const AdamLoopArgs<double>& a) { AdamAny(a); }

}  // namespace parex::cpu::PAREX_VECTOR_LOOPS_NS
