// Paddle 2.x's interp_v2 output size and scales (nearest / bilinear), shared
// by the schemas and the CPU kernels, which need the scales for the index
// ratio. In Paddle's order: SizeTensor (one value per tensor: out_h, out_w)
// gives the size; otherwise a Scale tensor (one value for both dims, or
// two) or the `scale` attribute gives the scales and the size in * scale,
// and then OutSize (two values) overrides the size while the scales still
// set the ratio; with none of these, out_h and out_w.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "base/status.h"
#include "graph/ir/op_schema.h"
#include "graph/ir/spec/value_inputs.h"

namespace parex {

struct InterpSizes {
  int64_t out_h = -1, out_w = -1;
  float scale_h = -1.f, scale_w = -1.f;  // -1: none (ratio in / out)
};

inline constexpr std::initializer_list<ValueInput> kInterpSizeInputs = {
    {"SizeTensor", true}, {"OutSize", false}, {"Scale", false}};

// Errors carry the op's label: a size outside [1, 2^31), a scale not finite
// and positive, a count of values that is neither one nor two. REQUIRES:
// run time when the op binds one of kInterpSizeInputs; in_h, in_w known.
StatusOr<InterpSizes> InterpSizesOf(const ShapeContext& ctx, int64_t in_h,
                                    int64_t in_w);

}  // namespace parex
