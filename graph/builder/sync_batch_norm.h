// Synchronised batch norm (Fluid's BuildStrategy::sync_batch_norm): batch
// statistics over every place's rows, so N places train as one place with
// the whole batch.
//
// The multi-device pass rewrites each training batch norm (batch_norm when
// asked, a program's own sync_batch_norm always; not one with global
// statistics) into stages that run on every place, with an all-reduce of
// their double sums between them (the builder adds it for SyncedOutputs):
//
//   sync_bn_sum      X -> Sum [C + 1]: per-channel sums, then the count
//   sync_bn_sq_dev   X, Sum -> SqDev [C]: squared deviations from the mean
//   sync_bn_apply    batch_norm's inputs, Sum, SqDev -> batch_norm's outputs
//                    (SavedMean, SavedVariance, running statistics, Y)
//
// and its gradient op into
//
//   sync_bn_grad_sum   X, SavedMean, SavedVariance, Y@GRAD -> GradSum [2C]
//                      (sum dy, sum dy * x_hat), and this place's
//                      Scale@GRAD / Bias@GRAD, which the parameter
//                      gradients' own all-reduce adds (op_role_var moves
//                      here)
//   sync_bn_grad_apply X, Scale, SavedMean, SavedVariance, Y@GRAD, Sum,
//                      GradSum -> X@GRAD
//
// Two passes over X, as batch_norm's kernel makes them, keep the variance as
// exact as one place's. Places may hold different row counts: the count
// travels in Sum. The stages' kernels are in kernels/cpu/batch_norm_kernel.cc.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "graph/ir/program.h"

namespace parex {

// True when `program` holds a batch norm that the rewrite would change with
// `all_batch_norms` (a training sync_batch_norm, or any training batch_norm
// when `all_batch_norms`).
bool HasBatchNormToSync(const Program& program, bool all_batch_norms);

// The program with its training batch norms (see above) rewritten into the
// synchronised stages; the new vars are named after the op's SavedMean
// ("<SavedMean>.sync_sum", ...). Errors: a gradient op whose SavedMean no
// rewritten forward op wrote, or a result that does not validate.
StatusOr<Program> SyncBatchNorm(const Program& program, bool all_batch_norms);

// The outputs of `op` that must be all-reduced across places right after it
// (the stages' sums); empty for every other op.
std::vector<std::string> SyncedOutputs(const OpDesc& op);

}  // namespace parex
