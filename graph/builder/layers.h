// The builder API: Fluid's layers in C++. A ProgramBuilder appends forward ops
// to block 0 of a main program and parameter initialisers to a startup
// program, naming everything the way Fluid does (fc_0.w_0, fc_0.b_0,
// fc_0.tmp_0, ...), so that the programs it builds are the programs
// PaddlePaddle builds for the same model.
//
// Layers return the VarDesc of their output (owned by the main program; stable
// while it lives). Every appended op gets op_role Forward and its output
// shapes from compile-time shape inference. Bad arguments (an unknown
// activation, a rank that does not fit) are errors naming the layer.
//
// ProgramBuilder, Initializer and ParamAttr are declared in
// graph/builder/program_builder.h, which this header includes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/dims.h"
#include "base/dtype.h"
#include "base/status.h"
#include "graph/builder/program_builder.h"  // ProgramBuilder, Initializer, ParamAttr
#include "graph/ir/program.h"

namespace parex {
namespace layers {

// `shape` without the batch dimension; append_batch_size prepends -1.
StatusOr<VarDesc*> Data(ProgramBuilder& b, const std::string& name,
                        const Dims& shape, DType dtype = DType::kFP32,
                        bool append_batch_size = true);

struct FcOptions {
  int size = 0;
  int num_flatten_dims = 1;
  std::string act;  // "", "relu", "sigmoid", "tanh", "softmax"
  ParamAttr param_attr;
  ParamAttr bias_attr;
  bool has_bias = true;
};
// mul + elementwise_add + activation; weights Xavier, bias 0 by default.
StatusOr<VarDesc*> Fc(ProgramBuilder& b, VarDesc* input, const FcOptions& o);

struct Conv2dOptions {
  int num_filters = 0;
  std::vector<int> filter_size{3, 3};
  std::vector<int> stride{1, 1};
  std::vector<int> padding{0, 0};
  std::vector<int> dilation{1, 1};
  int groups = 1;
  std::string act;
  ParamAttr param_attr;  // default: Normal(0, sqrt(2 / (kh*kw*C))) (Fluid)
  ParamAttr bias_attr;
  bool has_bias = true;
};
StatusOr<VarDesc*> Conv2d(ProgramBuilder& b, VarDesc* input,
                          const Conv2dOptions& o);

struct Pool2dOptions {
  std::vector<int> pool_size{2, 2};
  std::string pool_type = "max";  // "max" or "avg"
  std::vector<int> stride{1, 1};
  std::vector<int> padding{0, 0};
  bool global_pooling = false;
};
StatusOr<VarDesc*> Pool2d(ProgramBuilder& b, VarDesc* input,
                          const Pool2dOptions& o);

struct BatchNormOptions {
  std::string act;
  bool is_test = false;
  float momentum = 0.9f;
  float epsilon = 1e-5f;
  ParamAttr param_attr;  // scale, default 1
  ParamAttr bias_attr;   // default 0
};
StatusOr<VarDesc*> BatchNorm(ProgramBuilder& b, VarDesc* input,
                             const BatchNormOptions& o);

StatusOr<VarDesc*> Dropout(
    ProgramBuilder& b, VarDesc* x, float dropout_prob, bool is_test = false,
    int seed = 0, const std::string& implementation = "downgrade_in_infer");
StatusOr<VarDesc*> Embedding(ProgramBuilder& b, VarDesc* ids, int64_t vocab,
                             int64_t dim, ParamAttr param_attr = {},
                             int64_t padding_idx = -1, bool is_sparse = false);

StatusOr<VarDesc*> Relu(ProgramBuilder& b, VarDesc* x);
StatusOr<VarDesc*> Sigmoid(ProgramBuilder& b, VarDesc* x);
StatusOr<VarDesc*> Tanh(ProgramBuilder& b, VarDesc* x);
StatusOr<VarDesc*> Softmax(ProgramBuilder& b, VarDesc* x, int axis = -1);
// "relu", "sigmoid", "tanh", "softmax", or "" (returns x).
StatusOr<VarDesc*> Activation(ProgramBuilder& b, VarDesc* x,
                              const std::string& act);

StatusOr<VarDesc*> CrossEntropy(ProgramBuilder& b, VarDesc* input,
                                VarDesc* label, bool soft_label = false);
StatusOr<VarDesc*> SoftmaxWithCrossEntropy(ProgramBuilder& b, VarDesc* logits,
                                           VarDesc* label,
                                           bool soft_label = false);
// square(input - label), Fluid's square_error_cost.
StatusOr<VarDesc*> SquareErrorCost(ProgramBuilder& b, VarDesc* input,
                                   VarDesc* label);
StatusOr<VarDesc*> Mean(ProgramBuilder& b, VarDesc* x);
// top_k + accuracy; returns the fp32 [1] accuracy.
StatusOr<VarDesc*> Accuracy(ProgramBuilder& b, VarDesc* input, VarDesc* label,
                            int k = 1);

}  // namespace layers
}  // namespace parex
