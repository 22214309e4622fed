// Inference fusions (issue 34): rewrites of an inference program's block 0
// that leave its outputs as they were (within rounding) and pass over
// memory fewer times. Each is switchable; `parex infer` runs them on CPU
// places unless --no-fuse.
//
//   fold_batch_norm   conv2d / depthwise_conv2d (NCHW, no Bias or
//                     ResidualData) whose output only a batch_norm with
//                     global statistics reads -> conv2d with the filter
//                     scaled per output channel and a Bias:
//                       s = Scale / sqrt(Variance + epsilon)
//                       Filter' = Filter * s (per output channel)
//                       Bias' = BnBias - Mean * s
//                     Filter' and Bias' are new persistables, made from the
//                     parameters by the `fold` program (ops of parex's own
//                     kernels), which runs once before `main`.
//   fuse_residual     conv2d / depthwise_conv2d whose output only an
//                     elementwise_add with a tensor of the same shape reads
//                     (a residual block's shortcut) -> conv2d with that
//                     tensor as ResidualData, run where the add was; an
//                     activation after the add then fuses too.
//   fuse_activation   conv2d / depthwise_conv2d whose output only a relu,
//                     relu6, leaky_relu or hard_swish (Paddle's defaults)
//                     reads -> conv2d with attribute fuse_activation (the
//                     op's type; fuse_alpha: relu6's threshold, leaky_relu's
//                     slope),
//                     applied in the pass that adds the bias.
//   fuse_fc           mul / matmul / matmul_v2 by a constant 2-D W (no
//                     transpose, alpha 1) whose output only an
//                     elementwise_add of a constant bias [N] along the last
//                     dim reads, and a relu after it -> Paddle's fc (Input,
//                     W, Bias, in_num_col_dims, activation_type), run where
//                     the product was, bias and relu inside the product.
//   drop_identities   scale by 1 plus 0 (what save_inference_model puts
//                     before each fetch) and test-time dropout of
//                     upscale_in_train (or probability 0), which pass X
//                     through: X's producer writes their output instead.
//   mark_constant_filters  (below)
//
// A rewrite is skipped where it could change what the program computes:
// the intermediate is fetched, persistable, read by another op (in any
// block) or written by more than one; a parameter it reads is written by
// an op of the program; the layout is not NCHW.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "graph/ir/program.h"

namespace parex {

struct InferenceFusions {
  bool fold_batch_norm = true;
  bool fuse_residual = true;
  bool fuse_activation = true;
  // conv2d's constant_filter on every conv2d whose Filter is a persistable
  // no op of the program writes (the folded ones included), and matmul's
  // and matmul_v2's constant_y where Y is one: a kernel may keep what it
  // derives from the filter or the matrix across runs.
  bool mark_constant_filters = true;
  // channels_last (channels_last.h): convolutions run channels-last, with
  // the ops between them that do not care about the layout and ShuffleNet's
  // channel shuffles; transpose2 where a tensor crosses between the layouts.
  // Programs of one block only; fetched vars keep their layout.
  bool channels_last = true;
  bool drop_identities = true;
  bool fuse_fc = true;
};

struct FusedProgram {
  Program main;
  Program fold;  // no ops when nothing was folded
  int folded_batch_norms = 0;
  int fused_activations = 0;
  int fused_residuals = 0;
  int dropped_identities = 0;
  int fused_fcs = 0;          // products with their bias (and relu) made fc
  int channels_last_ops = 0;  // ops run channels-last
  int transposes = 0;         // transpose2 ops added between the layouts
};

StatusOr<FusedProgram> FuseForInference(
    const Program& program, const std::vector<std::string>& fetch_names,
    const InferenceFusions& fusions = {});

}  // namespace parex
