// vector_loops.h's baseline build and the dispatch between it and the AVX2
// build (vector_loops_avx2.cc, present where PAREX_WITH_AVX2_LOOPS is set).
#define PAREX_VECTOR_LOOPS_NS baseline
#include "kernels/cpu/vector_loops_impl.h"

namespace parex::cpu {
#ifdef PAREX_WITH_AVX2_LOOPS
namespace avx2 {
void Adam(const AdamLoopArgs<float>& a);
void Adam(const AdamLoopArgs<double>& a);
}  // namespace avx2
#endif

namespace {

bool UseAvx2() {
#ifdef PAREX_WITH_AVX2_LOOPS
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
#else
  return false;
#endif
}

}  // namespace

const char* VectorLoopsIsa() { return UseAvx2() ? "avx2" : "baseline"; }

#ifdef PAREX_WITH_AVX2_LOOPS
#define PAREX_DISPATCH(fn, args) \
  (UseAvx2() ? avx2::fn(args) : baseline::fn(args))
#else
#define PAREX_DISPATCH(fn, args) baseline::fn(args)
#endif

void AdamLoop(const AdamLoopArgs<float>& a) { PAREX_DISPATCH(Adam, a); }
void AdamLoop(const AdamLoopArgs<double>& a) { PAREX_DISPATCH(Adam, a); }

#undef PAREX_DISPATCH

namespace {

template <typename T>
bool AdamOn(std::string_view isa, const AdamLoopArgs<T>& a) {
  if (isa == "baseline") {
    baseline::Adam(a);
    return true;
  }
#ifdef PAREX_WITH_AVX2_LOOPS
  if (isa == "avx2" && UseAvx2()) {
    avx2::Adam(a);
    return true;
  }
#endif
  return false;
}

}  // namespace

bool AdamLoopOn(std::string_view isa, const AdamLoopArgs<float>& a) {
  return AdamOn(isa, a);
}
bool AdamLoopOn(std::string_view isa, const AdamLoopArgs<double>& a) {
  return AdamOn(isa, a);
}

}  // namespace parex::cpu
