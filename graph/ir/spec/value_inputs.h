// Paddle's tensor-valued attributes: a list of integers (a shape, slice
// bounds) that an op takes from an attribute unless an input gives it at
// run time, either as one tensor holding every value (reshape2's Shape,
// slice's StartsTensor) or as one single-value tensor per entry (reshape2's
// ShapeTensor, slice's StartsTensorList; what `paddle.shape(x)[0]` in a
// list makes). Shared by the schemas' shape inference and the kernels that
// read the same values (through a run-time ShapeContext).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "base/status.h"
#include "graph/ir/op_schema.h"

namespace parex {

struct ValueInput {
  const char* slot;
  bool per_tensor;  // one value per tensor (a duplicable slot)
};

// Whether the op binds any of `sources` (its values then decide the shape).
bool BindsAny(const ShapeContext& ctx,
              std::initializer_list<ValueInput> sources);

// The values of the first of `sources` (Paddle's priority order) the op
// binds, else `attr`. REQUIRES: run time when one is bound (compile-time
// callers check BindsAny first). Errors name the op, the slot and the
// tensor: a per-tensor entry that holds other than one value, a value that
// is not an integer.
StatusOr<std::vector<int64_t>> IntsFromInputsOrAttr(
    const ShapeContext& ctx, std::initializer_list<ValueInput> sources,
    std::vector<int64_t> attr);

// One integer: the single value of input `slot` when the op binds it (run
// time only), else `attr` (top_k_v2's K).
StatusOr<int64_t> IntFromInputOrAttr(const ShapeContext& ctx, const char* slot,
                                     int64_t attr);

}  // namespace parex
