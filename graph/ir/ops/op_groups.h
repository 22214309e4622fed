// The groups of op schemas, one file each under graph/ir/ops/. Their kernels
// live in kernels/cpu/ (the windowed ones in kernels/cpu/spatial/) in files
// of the same group name.
#pragma once

#include "base/checked_math.h"
#include "graph/ir/op_schema.h"

namespace parex {

// feed, fetch
void RegisterIoOps(OpSchemaRegistry* r);
// fill_constant(_batch_size_like), *_random, assign, scale, cast
void RegisterFillOps(OpSchemaRegistry* r);
// elementwise_add/sub/mul/div/max/min/pow, less_than, equal
void RegisterElementwiseOps(OpSchemaRegistry* r);
// relu, sigmoid, tanh, square, ...
void RegisterActivationOps(OpSchemaRegistry* r);
// softmax, cross_entropy, softmax_with_cross_entropy,
// sigmoid_cross_entropy_with_logits
void RegisterSoftmaxOps(OpSchemaRegistry* r);
// mean, reduce_sum, reduce_mean, sum, cumsum
void RegisterReduceOps(OpSchemaRegistry* r);
// accuracy, top_k, arg_max, one_hot_v2
void RegisterMetricOps(OpSchemaRegistry* r);
// sgd, momentum, adam
void RegisterOptimizerOps(OpSchemaRegistry* r);
// mul, matmul, matmul_v2
void RegisterMatmulOps(OpSchemaRegistry* r);
// conv2d, depthwise_conv2d, conv3d, pool2d, pool3d
void RegisterConvOps(OpSchemaRegistry* r);
// batch_norm, dropout, ...
void RegisterNormOps(OpSchemaRegistry* r);
// reshape2, transpose2, concat, split, ...
void RegisterShapeOps(OpSchemaRegistry* r);
// lookup_table, lookup_table_v2
void RegisterLookupTableOps(OpSchemaRegistry* r);
// sqrt, squared_l2_norm, increment, ... (optimizers, LR schedules)
void RegisterMathOps(OpSchemaRegistry* r);
// stack, gather, expand_v2, where
void RegisterTensorOps(OpSchemaRegistry* r);
// conv2d_transpose
void RegisterConvTransposeOps(OpSchemaRegistry* r);
// pad3d
void RegisterPadOps(OpSchemaRegistry* r);
// nearest_interp_v2, bilinear_interp_v2
void RegisterInterpOps(OpSchemaRegistry* r);
// tile, flip, roll, index_select (layout_ops.cc).
void RegisterLayoutOps(OpSchemaRegistry* r);
// group_norm, instance_norm
void RegisterGroupNormOps(OpSchemaRegistry* r);
void RegisterArrayOps(OpSchemaRegistry* r);
// conditional_block, while, select_input / select_output
void RegisterControlFlowOps(OpSchemaRegistry* r);

}  // namespace parex
