// How two operands of a binary op broadcast, as numbers (shared by the
// schemas' shape inference and the CPU and CUDA kernels).
//
// BroadcastBoth is Paddle 2.x's rule for the comparison op equal; the
// elementwise ops (elementwise_add/sub/mul/div/max/min/pow, less_than) use
// ElementwiseBroadcast, which is numpy's rule at axis -1 and Fluid's at an
// explicit axis.
#pragma once

#include <cstdint>
#include <vector>

#include "base/checked_math.h"
#include "base/dims.h"
#include "base/status.h"

namespace parex {

struct BroadcastSpec {
  Dims x;    // X's extents along each dim of Out (1 where X repeats)
  Dims y;    // Y's, likewise
  Dims out;  // Out's dims
};

// Paddle 2.x's comparisons: the operand of lower rank lines up with the
// other's dims starting at `axis` (-1: at the end, numpy's rule) and gets 1s
// elsewhere; paired extents are equal or one of them is 1, and Out takes the
// larger. Equal ranks line up at 0. InvalidArgument (without the op's label)
// for an axis outside [-1, max rank - min rank] or extents that do not pair.
// Unknown extents (-1, at compile time) pair with anything; Out's is then
// unknown unless the other is larger than 1.
StatusOr<BroadcastSpec> BroadcastBoth(const Dims& x, const Dims& y, int axis);

// The elementwise ops' broadcasting of X and Y into Out:
//  - axis == -1 (Paddle 2.x's default): numpy's rule. The dims line up at
//    the end, the operand of lower rank (either one) gets leading 1s, paired
//    extents are equal or one of them is 1, and Out takes the larger:
//    [3,1] and [1,4] give [3,4], [4] and [2,3,4] give [2,3,4].
//  - axis >= 0: Fluid's rule. Y's dims less its trailing 1s line up with X's
//    dims starting at `axis`, each equal to X's extent or 1; Out has X's dims
//    ([2,3,4] and [3,1] at axis 1 give [2,3,4]). Only Y broadcasts.
//  - X and Y of the same dims give Out those dims at any axis >= -1.
// Unknown extents (-1, at compile time) pair with anything; Out's is then
// the other's when that is larger than 1 (numpy's rule) or X's (Fluid's).
//
// The extents are written into fixed arrays, so kernels call this on every
// run without allocating (an error message allocates).
struct ElementwiseExtents {
  int rank = 0;  // Out's
  int64_t x[kMaxRank] = {};
  int64_t y[kMaxRank] = {};
  int64_t out[kMaxRank] = {};
};
// InvalidArgument (without the op's label; `x_name` / `y_name` name the
// operands, e.g. "Out@GRAD" in a gradient op) for an axis below -1, a rank
// above kMaxRank, or operands that do not broadcast; the message holds both
// shapes and the axis.
Status ElementwiseBroadcast(const Dims& x, const Dims& y, int axis,
                            ElementwiseExtents* extents,
                            const char* x_name = "X", const char* y_name = "Y");
// The same as Dims, for shape inference.
StatusOr<BroadcastSpec> ElementwiseBroadcastSpec(const Dims& x, const Dims& y,
                                                 int axis,
                                                 const char* x_name = "X",
                                                 const char* y_name = "Y");

}  // namespace parex
