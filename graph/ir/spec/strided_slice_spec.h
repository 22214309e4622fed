// Paddle's strided_slice, as numbers (shared by the schema's shape inference
// and the CPU kernels). Along each of `axes`: a negative start or end counts
// from the end; with a positive stride both are clamped to [0, extent]; with
// a negative one the start is clamped to [0, extent - 1] and the end to
// [0, extent] and both move up by one, so that the slice runs down from
// start to just above end (a negative end past the front is clamped to 0,
// not run through: Paddle's x[-1:-4:-1] of 3 rows has 2). decrease_axis
// then drops axes of one element.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "graph/ir/program.h"

namespace parex {

struct StridedSliceSpec {
  std::vector<int64_t> first;  // per dim of the input: the first index
  std::vector<int64_t> step;   // per dim: the stride (1 off the axes)
  Dims out;                    // per dim: the count taken
  Dims decreased;              // Out's dims (decrease_axis applied)
};

// InvalidArgument (without the op's label) for mismatched attribute lengths,
// an axis out of range or repeated, a stride of 0, a decrease_axis whose
// count is not 1. Unknown extents (-1) give unknown counts.
StatusOr<StridedSliceSpec> ComputeStridedSlice(
    const Dims& in, const std::vector<int>& axes,
    const std::vector<int>& starts, const std::vector<int>& ends,
    const std::vector<int>& strides, const std::vector<int>& decrease_axis);

}  // namespace parex
