// Paddle 2.x's broadcasting of two operands for the comparison ops (equal),
// as numbers (shared by the schema's shape inference and the CPU kernels).
// The operand of lower rank lines up with the other's dims starting at
// `axis` (-1: at the end, numpy's rule) and gets 1s elsewhere; paired
// extents are equal or one of them is 1, and Out takes the larger. Equal
// ranks line up at 0. Fluid's elementwise ops (elementwise_ops.cc) broadcast
// only Y into X; this rule broadcasts either.
#pragma once

#include <vector>

#include "base/dims.h"
#include "base/status.h"

namespace parex {

struct BroadcastSpec {
  Dims x;    // X's extents along each dim of Out (1 where X repeats)
  Dims y;    // Y's, likewise
  Dims out;  // Out's dims
};

// InvalidArgument (without the op's label) for an axis outside
// [-1, max rank - min rank] or extents that do not pair. Unknown extents
// (-1, at compile time) pair with anything; Out's is then unknown unless
// the other is larger than 1.
StatusOr<BroadcastSpec> BroadcastBoth(const Dims& x, const Dims& y, int axis);

}  // namespace parex
