#include "graph/builder/layers.h"

#include <cmath>

#include "graph/builder/layers_internal.h"

namespace parex {
namespace layers {
namespace internal {

Status LayerError(const std::string& layer, const std::string& message) {
  return InvalidArgument(layer + ": " + message);
}

Status CheckVar(const std::string& layer, const VarDesc* v, const char* what) {
  if (v == nullptr) return LayerError(layer, std::string(what) + " is null");
  return Status::Ok();
}

std::string VarText(const VarDesc& v) {
  return "'" + v.name() + "' " + DimsToString(v.dims());
}

StatusOr<VarDesc*> AppendUnary(ProgramBuilder& b, const std::string& helper,
                               const std::string& type, VarDesc* x,
                               const ProgramBuilder::AttrSetter& attrs) {
  VarDesc* out = b.CreateTemporary(helper, x->dtype());
  PAREX_RETURN_IF_ERROR(
      b.AppendOp(type, {{"X", {x->name()}}}, {{"Out", {out->name()}}}, attrs)
          .status());
  return out;
}

}  // namespace internal

namespace {

using internal::AppendUnary;
using internal::CheckVar;
using internal::LayerError;
using internal::VarText;

bool IsKnownAct(const std::string& act) {
  return act.empty() || act == "relu" || act == "sigmoid" || act == "tanh" ||
         act == "softmax";
}

Status CheckAct(const std::string& layer, const std::string& act) {
  if (IsKnownAct(act)) return Status::Ok();
  return LayerError(layer, "unknown act '" + act +
                               "' (expected relu, sigmoid, tanh, softmax or "
                               "none)");
}

// The name of a layer's parameter: attr.name, else "<helper>.<suffix>_<k>".
std::string ParamName(ProgramBuilder& b, const std::string& helper,
                      const char* suffix, const ParamAttr& attr) {
  return attr.name.empty() ? b.UniqueName(helper + "." + suffix) : attr.name;
}

// Fluid's LayerHelper.append_activation: `act` on x, the output named after
// the layer's helper.
StatusOr<VarDesc*> AppendActivation(ProgramBuilder& b,
                                    const std::string& helper, VarDesc* x,
                                    const std::string& act) {
  if (act.empty()) return x;
  return AppendUnary(b, helper, act, x);
}

// Fluid's LayerHelper.append_bias_op: a [dims[axis]] bias parameter added
// along `axis`; the output named after the helper.
StatusOr<VarDesc*> AppendBias(ProgramBuilder& b, const std::string& helper,
                              VarDesc* x, int64_t size, int axis,
                              const ParamAttr& attr) {
  PAREX_ASSIGN_OR_RETURN(
      VarDesc * bias,
      b.CreateParameter(ParamName(b, helper, "b", attr), {size}, x->dtype(),
                        Initializer::Constant(0.0), attr));
  VarDesc* out = b.CreateTemporary(helper, x->dtype());
  PAREX_RETURN_IF_ERROR(
      b.AppendOp("elementwise_add", {{"X", {x->name()}}, {"Y", {bias->name()}}},
                 {{"Out", {out->name()}}},
                 [axis](OpDesc& op) { op.SetAttr<int>("axis", axis); })
          .status());
  return out;
}

Status CheckPair(const std::string& layer, const char* what,
                 const std::vector<int>& v, int min) {
  if (v.size() == 2 && v[0] >= min && v[1] >= min) return Status::Ok();
  Dims d(v.begin(), v.end());
  return LayerError(layer, std::string(what) + " " + DimsToString(d) +
                               " must be two ints >= " + std::to_string(min));
}

}  // namespace

StatusOr<VarDesc*> Data(ProgramBuilder& b, const std::string& name,
                        const Dims& shape, DType dtype,
                        bool append_batch_size) {
  if (name.empty()) return LayerError("data", "empty name");
  if (b.block().FindLocalVar(name) != nullptr) {
    return LayerError("data", "variable '" + name + "' is already declared");
  }
  if (SizeOf(dtype) == 0) {
    return LayerError("data", "'" + name + "' has no element dtype");
  }
  Dims dims = shape;
  for (int64_t d : dims) {
    if (d < -1) {
      return LayerError("data", "'" + name + "' shape " + DimsToString(shape) +
                                    " has an extent < -1");
    }
    // Fluid: a shape that already holds an unknown extent gets no batch dim.
    if (d == -1) append_batch_size = false;
  }
  if (append_batch_size) dims.insert(dims.begin(), -1);
  VarDesc* v = b.block().Var(name);
  v->SetDType(dtype);
  v->SetDims(dims);
  v->SetStopGradient(true);
  v->SetPersistable(false);
  v->mutable_proto()->set_need_check_feed(true);
  v->mutable_proto()->mutable_type()->mutable_lod_tensor()->set_lod_level(0);
  return v;
}

StatusOr<VarDesc*> Fc(ProgramBuilder& b, VarDesc* input, const FcOptions& o) {
  const std::string layer = "fc";
  PAREX_RETURN_IF_ERROR(CheckVar(layer, input, "input"));
  PAREX_RETURN_IF_ERROR(CheckAct(layer, o.act));
  if (o.size <= 0) {
    return LayerError(layer, "size " + std::to_string(o.size) + " must be > 0");
  }
  const Dims in = input->dims();
  const int rank = static_cast<int>(in.size());
  if (o.num_flatten_dims < 1 || o.num_flatten_dims >= rank) {
    return LayerError(layer,
                      "num_flatten_dims " + std::to_string(o.num_flatten_dims) +
                          " must be in [1, rank) for input " + VarText(*input));
  }
  const int64_t width = Numel(Dims(in.begin() + o.num_flatten_dims, in.end()));
  if (width <= 0) {
    return LayerError(layer, "input " + VarText(*input) +
                                 " must have known extents after dim " +
                                 std::to_string(o.num_flatten_dims - 1));
  }
  const std::string name = b.UniqueName("fc");
  const DType dtype = input->dtype();
  PAREX_ASSIGN_OR_RETURN(
      VarDesc * w,
      b.CreateParameter(ParamName(b, name, "w", o.param_attr), {width, o.size},
                        dtype, Initializer::Xavier(), o.param_attr));
  VarDesc* mul_out = b.CreateTemporary(name, dtype);
  const int x_cols = o.num_flatten_dims;
  PAREX_RETURN_IF_ERROR(b.AppendOp("mul",
                                   {{"X", {input->name()}}, {"Y", {w->name()}}},
                                   {{"Out", {mul_out->name()}}},
                                   [x_cols](OpDesc& op) {
                                     op.SetAttr<int>("x_num_col_dims", x_cols);
                                     op.SetAttr<int>("y_num_col_dims", 1);
                                   })
                            .status());
  VarDesc* out = mul_out;
  if (o.has_bias) {
    PAREX_ASSIGN_OR_RETURN(out, AppendBias(b, name, mul_out, o.size,
                                           o.num_flatten_dims, o.bias_attr));
  }
  return AppendActivation(b, name, out, o.act);
}

namespace {

// Conv2d's input (NCHW, known channels) and options.
Status CheckConv2d(const std::string& layer, VarDesc* input,
                   const Conv2dOptions& o) {
  const Dims in = input->dims();
  if (in.size() != 4) {
    return LayerError(layer,
                      "input " + VarText(*input) + " must have rank 4 (NCHW)");
  }
  const int64_t channels = in[1];
  if (channels <= 0) {
    return LayerError(
        layer, "input " + VarText(*input) + " must have a known channel count");
  }
  if (o.num_filters <= 0) {
    return LayerError(
        layer, "num_filters " + std::to_string(o.num_filters) + " must be > 0");
  }
  PAREX_RETURN_IF_ERROR(CheckPair(layer, "filter_size", o.filter_size, 1));
  PAREX_RETURN_IF_ERROR(CheckPair(layer, "stride", o.stride, 1));
  PAREX_RETURN_IF_ERROR(CheckPair(layer, "padding", o.padding, 0));
  PAREX_RETURN_IF_ERROR(CheckPair(layer, "dilation", o.dilation, 1));
  if (o.groups < 1 || channels % o.groups != 0) {
    return LayerError(layer, "groups " + std::to_string(o.groups) +
                                 " must be >= 1 and divide the " +
                                 std::to_string(channels) +
                                 " channels of input " + VarText(*input));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<VarDesc*> Conv2d(ProgramBuilder& b, VarDesc* input,
                          const Conv2dOptions& o) {
  const std::string layer = "conv2d";
  PAREX_RETURN_IF_ERROR(CheckVar(layer, input, "input"));
  PAREX_RETURN_IF_ERROR(CheckAct(layer, o.act));
  PAREX_RETURN_IF_ERROR(CheckConv2d(layer, input, o));
  const int64_t channels = input->dims()[1];
  const std::string name = b.UniqueName("conv2d");
  const DType dtype = input->dtype();
  const int64_t kh = o.filter_size[0], kw = o.filter_size[1];
  // Fluid's default: Normal(0, sqrt(2 / (kh * kw * C))), C the input's
  // channels (not divided by groups).
  const Initializer default_init =
      Initializer::Normal(0.0, std::sqrt(2.0 / double(kh * kw * channels)));
  PAREX_ASSIGN_OR_RETURN(
      VarDesc * filter,
      b.CreateParameter(ParamName(b, name, "w", o.param_attr),
                        {o.num_filters, channels / o.groups, kh, kw}, dtype,
                        default_init, o.param_attr));
  VarDesc* conv_out = b.CreateTemporary(name, dtype);
  PAREX_RETURN_IF_ERROR(
      b.AppendOp("conv2d",
                 {{"Input", {input->name()}}, {"Filter", {filter->name()}}},
                 {{"Output", {conv_out->name()}}},
                 [&o](OpDesc& op) {
                   op.SetAttr<std::vector<int>>("strides", o.stride);
                   op.SetAttr<std::vector<int>>("paddings", o.padding);
                   op.SetAttr<std::vector<int>>("dilations", o.dilation);
                   op.SetAttr<int>("groups", o.groups);
                   op.SetAttr<bool>("use_cudnn", true);
                   op.SetAttr<bool>("use_mkldnn", false);
                   op.SetAttr<std::string>("padding_algorithm", "EXPLICIT");
                   op.SetAttr<std::string>("data_format", "NCHW");
                 })
          .status());
  VarDesc* out = conv_out;
  if (o.has_bias) {
    PAREX_ASSIGN_OR_RETURN(
        out, AppendBias(b, name, conv_out, o.num_filters, 1, o.bias_attr));
  }
  return AppendActivation(b, name, out, o.act);
}

StatusOr<VarDesc*> Pool2d(ProgramBuilder& b, VarDesc* input,
                          const Pool2dOptions& o) {
  const std::string layer = "pool2d";
  PAREX_RETURN_IF_ERROR(CheckVar(layer, input, "input"));
  if (input->dims().size() != 4) {
    return LayerError(layer,
                      "input " + VarText(*input) + " must have rank 4 (NCHW)");
  }
  if (o.pool_type != "max" && o.pool_type != "avg") {
    return LayerError(layer,
                      "pool_type '" + o.pool_type + "' must be 'max' or 'avg'");
  }
  PAREX_RETURN_IF_ERROR(CheckPair(layer, "pool_size", o.pool_size, 1));
  PAREX_RETURN_IF_ERROR(CheckPair(layer, "stride", o.stride, 1));
  PAREX_RETURN_IF_ERROR(CheckPair(layer, "padding", o.padding, 0));
  const std::string name = b.UniqueName("pool2d");
  return AppendUnary(b, name, "pool2d", input, [&o](OpDesc& op) {
    op.SetAttr<std::string>("pooling_type", o.pool_type);
    op.SetAttr<std::vector<int>>("ksize", o.pool_size);
    op.SetAttr<bool>("global_pooling", o.global_pooling);
    op.SetAttr<std::vector<int>>("strides", o.stride);
    op.SetAttr<std::vector<int>>("paddings", o.padding);
    op.SetAttr<std::string>("padding_algorithm", "EXPLICIT");
    op.SetAttr<bool>("use_cudnn", true);
    op.SetAttr<bool>("ceil_mode", false);
    op.SetAttr<bool>("use_mkldnn", false);
    op.SetAttr<bool>("exclusive", true);
    op.SetAttr<std::string>("data_format", "NCHW");
  });
}

namespace {

// A batch norm's affine parameters and running statistics.
struct BatchNormParams {
  VarDesc* scale;
  VarDesc* bias;
  VarDesc* mean;
  VarDesc* variance;
};

StatusOr<BatchNormParams> MakeBatchNormParams(ProgramBuilder& b,
                                              const std::string& name,
                                              int64_t channels, DType dtype,
                                              const BatchNormOptions& o) {
  BatchNormParams p;
  PAREX_ASSIGN_OR_RETURN(
      p.scale,
      b.CreateParameter(ParamName(b, name, "w", o.param_attr), {channels},
                        dtype, Initializer::Constant(1.0), o.param_attr));
  PAREX_ASSIGN_OR_RETURN(
      p.bias,
      b.CreateParameter(ParamName(b, name, "b", o.bias_attr), {channels}, dtype,
                        Initializer::Constant(0.0), o.bias_attr));
  // The running statistics are parameters that are not trained.
  ParamAttr stats;
  stats.trainable = false;
  PAREX_ASSIGN_OR_RETURN(
      p.mean, b.CreateParameter(b.UniqueName(name + ".w"), {channels}, dtype,
                                Initializer::Constant(0.0), stats));
  PAREX_ASSIGN_OR_RETURN(
      p.variance, b.CreateParameter(b.UniqueName(name + ".w"), {channels},
                                    dtype, Initializer::Constant(1.0), stats));
  return p;
}

}  // namespace

StatusOr<VarDesc*> BatchNorm(ProgramBuilder& b, VarDesc* input,
                             const BatchNormOptions& o) {
  const std::string layer = "batch_norm";
  PAREX_RETURN_IF_ERROR(CheckVar(layer, input, "input"));
  PAREX_RETURN_IF_ERROR(CheckAct(layer, o.act));
  const Dims in = input->dims();
  if (in.size() < 2 || in.size() > 5 || in[1] <= 0) {
    return LayerError(layer, "input " + VarText(*input) +
                                 " must have rank 2 to 5 and a known "
                                 "channel dim 1 (NCHW)");
  }
  const int64_t channels = in[1];
  const std::string name = b.UniqueName("batch_norm");
  // Fluid keeps the statistics and affine parameters of fp16 inputs in fp32.
  const DType dtype =
      input->dtype() == DType::kFP16 ? DType::kFP32 : input->dtype();
  PAREX_ASSIGN_OR_RETURN(const BatchNormParams params,
                         MakeBatchNormParams(b, name, channels, dtype, o));
  VarDesc* saved_mean = b.CreateTemporary(name, dtype);
  saved_mean->SetStopGradient(true);
  VarDesc* saved_variance = b.CreateTemporary(name, dtype);
  saved_variance->SetStopGradient(true);
  // Training mode declares ReserveSpace before Y, as Paddle 2.x does (its
  // batch_norm kernel requires the output; parex leaves it empty on CPU).
  VarDesc* reserve_space = nullptr;
  if (!o.is_test) {
    reserve_space = b.CreateTemporary(name, input->dtype());
    reserve_space->SetStopGradient(true);
  }
  VarDesc* y = b.CreateTemporary(name, input->dtype());
  std::map<std::string, std::vector<std::string>> bn_outputs = {
      {"Y", {y->name()}},
      {"MeanOut", {params.mean->name()}},
      {"VarianceOut", {params.variance->name()}},
      {"SavedMean", {saved_mean->name()}},
      {"SavedVariance", {saved_variance->name()}}};
  if (reserve_space != nullptr) {
    bn_outputs["ReserveSpace"] = {reserve_space->name()};
  }
  PAREX_RETURN_IF_ERROR(
      b.AppendOp("batch_norm",
                 {{"X", {input->name()}},
                  {"Scale", {params.scale->name()}},
                  {"Bias", {params.bias->name()}},
                  {"Mean", {params.mean->name()}},
                  {"Variance", {params.variance->name()}}},
                 bn_outputs,
                 [&o](OpDesc& op) {
                   op.SetAttr<float>("momentum", o.momentum);
                   op.SetAttr<float>("epsilon", o.epsilon);
                   op.SetAttr<bool>("is_test", o.is_test);
                   op.SetAttr<std::string>("data_layout", "NCHW");
                   op.SetAttr<bool>("use_mkldnn", false);
                   op.SetAttr<bool>("fuse_with_relu", false);
                   op.SetAttr<bool>("use_global_stats", false);
                 })
          .status());
  return AppendActivation(b, name, y, o.act);
}

StatusOr<VarDesc*> Dropout(ProgramBuilder& b, VarDesc* x, float dropout_prob,
                           bool is_test, int seed,
                           const std::string& implementation) {
  const std::string layer = "dropout";
  PAREX_RETURN_IF_ERROR(CheckVar(layer, x, "x"));
  if (!(dropout_prob >= 0.0f && dropout_prob <= 1.0f)) {
    return LayerError(layer, "dropout_prob " + std::to_string(dropout_prob) +
                                 " is outside [0, 1]");
  }
  if (implementation != "downgrade_in_infer" &&
      implementation != "upscale_in_train") {
    return LayerError(
        layer, "unknown dropout_implementation '" + implementation + "'");
  }
  // Fluid: a dropout without its own seed takes the program's random_seed.
  if (seed == 0) seed = b.random_seed();
  const std::string name = b.UniqueName("dropout");
  VarDesc* out = b.CreateTemporary(name, x->dtype());
  VarDesc* mask = b.CreateTemporary(name, DType::kUInt8);
  mask->SetStopGradient(true);
  PAREX_RETURN_IF_ERROR(
      b.AppendOp("dropout", {{"X", {x->name()}}},
                 {{"Out", {out->name()}}, {"Mask", {mask->name()}}},
                 [&](OpDesc& op) {
                   op.SetAttr<float>("dropout_prob", dropout_prob);
                   op.SetAttr<bool>("is_test", is_test);
                   op.SetAttr<bool>("fix_seed", seed != 0);
                   op.SetAttr<int>("seed", seed);
                   op.SetAttr<std::string>("dropout_implementation",
                                           implementation);
                 })
          .status());
  return out;
}

StatusOr<VarDesc*> Embedding(ProgramBuilder& b, VarDesc* ids, int64_t vocab,
                             int64_t dim, ParamAttr param_attr,
                             int64_t padding_idx, bool is_sparse) {
  const std::string layer = "embedding";
  PAREX_RETURN_IF_ERROR(CheckVar(layer, ids, "ids"));
  const Dims id_dims = ids->dims();
  if (id_dims.empty() || !ExtentsAgree(id_dims.back(), 1)) {
    return LayerError(layer,
                      "ids " + VarText(*ids) + " must have a last dim of 1");
  }
  if (ids->dtype() != DType::kInt64) {
    return LayerError(layer, "ids " + VarText(*ids) + " must be int64, not " +
                                 DTypeName(ids->dtype()));
  }
  if (vocab <= 0 || dim <= 0) {
    return LayerError(layer, "size [" + std::to_string(vocab) + "," +
                                 std::to_string(dim) + "] must be positive");
  }
  // -1: no padding; other negative values count from the end (Fluid).
  if (padding_idx < -vocab || padding_idx >= vocab) {
    return LayerError(layer, "padding_idx " + std::to_string(padding_idx) +
                                 " is outside [-vocab, vocab)");
  }
  if (padding_idx < -1) padding_idx += vocab;
  const std::string name = b.UniqueName("embedding");
  PAREX_ASSIGN_OR_RETURN(
      VarDesc * w,
      b.CreateParameter(ParamName(b, name, "w", param_attr), {vocab, dim},
                        DType::kFP32, Initializer::Xavier(), param_attr));
  VarDesc* out = b.CreateTemporary(name, DType::kFP32);
  PAREX_RETURN_IF_ERROR(
      b.AppendOp("lookup_table", {{"Ids", {ids->name()}}, {"W", {w->name()}}},
                 {{"Out", {out->name()}}},
                 [&](OpDesc& op) {
                   op.SetAttr<bool>("is_sparse", is_sparse);
                   op.SetAttr<bool>("is_distributed", false);
                   op.SetAttr<bool>("remote_prefetch", false);
                   op.SetAttr<int64_t>("padding_idx", padding_idx);
                 })
          .status());
  return out;
}

StatusOr<VarDesc*> Activation(ProgramBuilder& b, VarDesc* x,
                              const std::string& act) {
  PAREX_RETURN_IF_ERROR(CheckVar("activation", x, "x"));
  if (!IsKnownAct(act)) {
    return LayerError("activation", "unknown act '" + act + "'");
  }
  if (act.empty()) return x;
  if (act == "softmax") return Softmax(b, x);
  return AppendActivation(b, b.UniqueName(act), x, act);
}

StatusOr<VarDesc*> Relu(ProgramBuilder& b, VarDesc* x) {
  return Activation(b, x, "relu");
}

StatusOr<VarDesc*> Sigmoid(ProgramBuilder& b, VarDesc* x) {
  return Activation(b, x, "sigmoid");
}

StatusOr<VarDesc*> Tanh(ProgramBuilder& b, VarDesc* x) {
  return Activation(b, x, "tanh");
}

StatusOr<VarDesc*> Softmax(ProgramBuilder& b, VarDesc* x, int axis) {
  const std::string layer = "softmax";
  PAREX_RETURN_IF_ERROR(CheckVar(layer, x, "x"));
  const int rank = static_cast<int>(x->dims().size());
  if (rank < 1 || axis < -rank || axis >= rank) {
    return LayerError(layer, "axis " + std::to_string(axis) +
                                 " is out of range for x " + VarText(*x));
  }
  return AppendUnary(b, b.UniqueName("softmax"), "softmax", x,
                     [axis](OpDesc& op) {
                       op.SetAttr<int>("axis", axis);
                       op.SetAttr<bool>("use_cudnn", false);
                     });
}

}  // namespace layers
}  // namespace parex
