// Launch plans: how an op's input shapes and attributes map onto the device
// launchers (cuda_launchers.h) or a GEMM. Pure host code with no CUDA calls,
// so the shape rules are testable without a device.
//
// Errors are InvalidArgument (shapes or attributes the op does not accept)
// or Unimplemented (valid, but beyond what the launchers take); their
// messages do not name the op: kernels add it.
#pragma once

#include <cstdint>
#include <vector>

#include "base/dims.h"
#include "base/status.h"
#include "kernels/cuda/cuda_launchers.h"

namespace parex {

// ---- elementwise_* ----

// The elementwise ops' broadcasting (ElementwiseBroadcast,
// graph/ir/spec/broadcast_spec.h: numpy's rule at axis -1, either operand
// broadcasting; Fluid's at an explicit axis), laid onto a launcher: Out's
// dims of extent 1 are dropped and neighbours along which X and Y repeat
// alike are merged; one operand repeating along one run of dims is kMid,
// anything else (both repeating: [3,1] and [1,4]) kGeneral.
struct ElementwisePlan {
  enum class Kind {
    kSameShape,  // numel elements, no broadcast
    kMid,        // LaunchBinaryMid with pre/n/post
    kGeneral,    // LaunchBinaryGeneral with `shape`
  };
  Kind kind = Kind::kSameShape;
  Dims out_dims;
  int64_t numel = 0;
  bool broadcast_y = true;  // kMid: Y is the small operand
  int64_t pre = 1, n = 1, post = 1;
  BroadcastShape shape;  // kGeneral
};
StatusOr<ElementwisePlan> PlanElementwise(const Dims& x, const Dims& y,
                                          int axis);

// ---- reduce_sum, reduce_mean, mean ----

// The reduction of x over `dims` (negative counts from the back; empty or
// reduce_all: every dim). Dims of extent 1 are dropped and neighbours of the
// same kind (kept / reduced) merged before choosing the launcher.
struct ReducePlan {
  enum class Kind {
    kMiddle,   // LaunchReduceSum with outer/reduce/inner
    kGeneral,  // LaunchReduceSumGeneral with `shape`
  };
  Kind kind = Kind::kMiddle;
  Dims out_dims;  // Fluid's: reduced dims kept as 1 or removed ([1] if none)
  int64_t out_numel = 1;
  int64_t reduce_count = 1;  // elements summed per output
  int64_t outer = 1, reduce = 1, inner = 1;
  ReduceShape shape;
};
StatusOr<ReducePlan> PlanReduce(const Dims& x, const std::vector<int>& dims,
                                bool keep_dim, bool reduce_all);

// ---- mul, matmul, matmul_v2 ----

// out_b[m,n] = op(X_b)[m,k] * op(Y_b)[k,n] for b < batch, all row-major.
struct MatmulPlan {
  int64_t m = 0, n = 0, k = 0;
  bool trans_x = false, trans_y = false;  // applied to the stored matrices
  int64_t ldx = 0, ldy = 0;               // row strides as stored
  int64_t batch = 1;
  // Strided batches: X_b = x + b * x_stride (0 reuses one matrix). When
  // !strided, the batch dims broadcast both ways and BatchOffsets gives each
  // batch's matrices.
  bool strided = true;
  int64_t x_stride = 0, y_stride = 0;
  int64_t x_matrix_size = 0, y_matrix_size = 0;  // elements per matrix
  Dims batch_dims, x_batch_dims, y_batch_dims;   // !strided: right-aligned
  Dims out_dims;
};
// Element offsets of batch b's X and Y matrices.
// REQUIRES: b < plan.batch.
void BatchOffsets(const MatmulPlan& plan, int64_t b, int64_t* x_offset,
                  int64_t* y_offset);

// mul: X flattened to [prod(x[:x_num_col_dims]), rest], Y likewise.
StatusOr<MatmulPlan> PlanMul(const Dims& x, const Dims& y, int x_num_col_dims,
                             int y_num_col_dims);
// matmul (v1): 1-D X is a row [1,K], 1-D Y a column [K,1], then transposed
// if asked; the leading dims of a 3-D+ operand are one flat batch, which the
// other operand shares or (2-D, or batch 1) broadcasts over.
StatusOr<MatmulPlan> PlanMatmul(const Dims& x, const Dims& y, bool transpose_x,
                                bool transpose_y);
// matmul_v2: numpy matmul. 1-D operands ignore their transpose flag and lose
// their dim in the output; batch dims broadcast.
StatusOr<MatmulPlan> PlanMatmulV2(const Dims& x, const Dims& y, bool trans_x,
                                  bool trans_y);

}  // namespace parex
