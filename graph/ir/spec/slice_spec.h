// Paddle's slice, as numbers: which elements of an input of dims `in` the
// op takes (shared by the schema's shape inference and the CPU kernels).
// Along each of `axes`, [start, end) with negative bounds counted from the
// end and both clamped to [0, extent] (an end before its start is an error,
// as in Paddle 2.6);
// `decrease_axis` then drops axes left with extent 1 (all of them: one
// element remains, as a [1]).
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "graph/ir/op_schema.h"
#include "graph/ir/program.h"
#include "graph/ir/spec/value_inputs.h"

namespace parex {

struct SliceSpec {
  std::vector<int64_t> begin;  // per dim of the input
  Dims out;                    // extents taken, per dim of the input
  Dims decreased;              // Out's dims (decrease_axis applied)
};

// InvalidArgument (without the op's label) for mismatched attribute lengths,
// an axis out of range or repeated, a decrease_axis whose extent is not 1.
// Unknown extents (-1, at compile time) stay unknown.
StatusOr<SliceSpec> ComputeSlice(const Dims& in, const std::vector<int>& axes,
                                 const std::vector<int64_t>& starts,
                                 const std::vector<int64_t>& ends,
                                 const std::vector<int>& decrease_axis);

// slice's (and slice_grad's) bounds as tensors, Paddle's priority order:
// StartsTensor (one tensor), StartsTensorList (one per entry), then the
// `starts` attribute; the same for ends.
inline constexpr std::initializer_list<ValueInput> kSliceStarts = {
    {"StartsTensor", false}, {"StartsTensorList", true}};
inline constexpr std::initializer_list<ValueInput> kSliceEnds = {
    {"EndsTensor", false}, {"EndsTensorList", true}};

// The slice of `in` an op describes, its bounds read from its tensors or
// attributes; errors carry the op's label. REQUIRES: run time when the op
// binds a bound tensor.
StatusOr<SliceSpec> SliceSpecOf(const ShapeContext& ctx, const Dims& in);

}  // namespace parex
