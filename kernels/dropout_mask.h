// What a training-mode dropout draws, shared by the CPU and CUDA kernels so
// that a run on either keeps the same elements (the CUDA kernel draws on the
// host and copies the mask over): the op's seed rule and the mask itself.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/kernel_context.h"

namespace parex {

// The op's seed: the Seed input's value when given (int32 or int64, read
// from host memory), else `seed` when fix_seed, else 0 (a fresh draw from
// the context's generator: DeviceContext::NextSeed).
StatusOr<int64_t> DropoutOpSeed(const KernelContext& ctx);

// mask[i] = 1 when element i is kept: a std::mt19937_64 seeded with `seed`
// draws uniform floats in [0, 1) in element order, kept when >= p.
void DrawDropoutMask(uint64_t seed, float p, int64_t n, uint8_t* mask);

}  // namespace parex
