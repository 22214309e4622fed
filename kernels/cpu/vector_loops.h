// Element loops that are bound by arithmetic rather than memory (a square
// root and a division per element), built twice: for the baseline x86-64
// vector width and with AVX2, picked at run time by what the CPU has. Both
// builds perform the same IEEE operations on every element (no fused
// multiply-add: -ffp-contract=off), so they give the same bits; AVX2 only
// does eight at a time (Adam over a 784x256 parameter: 135 -> 72 us).
#pragma once

#include <cstdint>
#include <string_view>

namespace parex::cpu {

// Fluid's Adam over n elements, given the bias-corrected step lr_t and
// epsilon eps_t: m1 = b1 m1 + (1-b1) g; m2 = b2 m2 + (1-b2) g^2;
// p -= lr_t * m1 / (sqrt(m2) + eps_t). Outputs may be their inputs. The
// gradient g is grad, plus each of the num_addends arrays in `addends` in
// order ((grad + a0) + a1 ...), when there are any.
template <typename T>
struct AdamLoopArgs {
  int64_t n;
  const T *param, *grad, *m1, *m2;
  T *param_out, *m1_out, *m2_out;
  T beta1, beta2, lr_t, eps_t;
  const T* const* addends = nullptr;
  int num_addends = 0;
};

void AdamLoop(const AdamLoopArgs<float>& a);
void AdamLoop(const AdamLoopArgs<double>& a);

// Which build the loops run: "avx2" or "baseline".
const char* VectorLoopsIsa();

// The loop of build `isa` ("baseline", "avx2"), for tests that hold the
// builds to the same bits; false (nothing run) where that build is not
// there or the CPU lacks it.
bool AdamLoopOn(std::string_view isa, const AdamLoopArgs<float>& a);
bool AdamLoopOn(std::string_view isa, const AdamLoopArgs<double>& a);

}  // namespace parex::cpu
