// The groups of op schemas, one file each under graph/ops/. Their kernels
// live in kernels/cpu/ files of the same group name.
#pragma once

#include "base/checked_math.h"
#include "graph/ir/op_schema.h"

namespace parex {

void RegisterIoOps(OpSchemaRegistry* r);          // feed, fetch
void RegisterFillOps(OpSchemaRegistry* r);        // fill_constant(_batch_size_like), *_random, assign, scale, cast
void RegisterElementwiseOps(OpSchemaRegistry* r); // elementwise_add/sub/mul/div/max/min/pow, less_than, equal
void RegisterActivationOps(OpSchemaRegistry* r);  // relu, sigmoid, tanh, square
void RegisterSoftmaxOps(OpSchemaRegistry* r);     // softmax, cross_entropy, softmax_with_cross_entropy,
                                                  // sigmoid_cross_entropy_with_logits
void RegisterReduceOps(OpSchemaRegistry* r);      // mean, reduce_sum, reduce_mean, sum, cumsum
void RegisterMetricOps(OpSchemaRegistry* r);      // accuracy, top_k, arg_max, one_hot_v2
void RegisterOptimizerOps(OpSchemaRegistry* r);   // sgd, momentum, adam
void RegisterMatmulOps(OpSchemaRegistry* r);      // mul, matmul, matmul_v2
void RegisterConvOps(OpSchemaRegistry* r);        // conv2d, depthwise_conv2d, conv3d, pool2d, pool3d
void RegisterNormOps(OpSchemaRegistry* r);        // batch_norm, dropout
void RegisterShapeOps(OpSchemaRegistry* r);       // reshape2, transpose2, concat, split
void RegisterLookupTableOps(OpSchemaRegistry* r); // lookup_table, lookup_table_v2
void RegisterMathOps(OpSchemaRegistry* r);        // sqrt, squared_l2_norm, increment, ... (optimizers, LR schedules)
void RegisterTensorOps(OpSchemaRegistry* r);      // stack, gather, expand_v2, where
void RegisterConvTransposeOps(OpSchemaRegistry* r); // conv2d_transpose
void RegisterPadOps(OpSchemaRegistry* r);         // pad3d
void RegisterInterpOps(OpSchemaRegistry* r);      // nearest_interp_v2, bilinear_interp_v2

}  // namespace parex
