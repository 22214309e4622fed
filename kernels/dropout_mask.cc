#include "kernels/dropout_mask.h"

#include <random>

namespace parex {

StatusOr<int64_t> DropoutOpSeed(const KernelContext& ctx) {
  if (const Tensor* seed = ctx.Input("Seed")) {
    if (!seed->place().is_cpu()) {
      return ctx.Error("the Seed input is on " + seed->place().ToString() +
                       "; dropout reads it on the host");
    }
    switch (seed->dtype()) {
      case DType::kInt32:
        return int64_t{seed->data<int32_t>()[0]};
      case DType::kInt64:
        return seed->data<int64_t>()[0];
      default:
        return ctx.Error("Seed must be int32 or int64");
    }
  }
  return ctx.Attr<bool>("fix_seed") ? int64_t{ctx.Attr<int>("seed")} : 0;
}

void DrawDropoutMask(uint64_t seed, float p, int64_t n, uint8_t* mask) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  for (int64_t i = 0; i < n; ++i) mask[i] = uniform(engine) >= p ? 1 : 0;
}

}  // namespace parex
