// batch_norm and dropout, with their gradient ops (Fluid's slots and
// attributes).
//
// batch_norm normalises X per channel (dim 1 for NCHW of rank 2..5, the last
// dim for NHWC). In training it uses the batch's mean and biased variance
// and updates the running statistics in place (MeanOut / VarianceOut are
// the Mean / Variance variables in Fluid programs):
//   MeanOut = momentum * Mean + (1 - momentum) * batch_mean, VarianceOut
//   likewise with the biased batch variance; SavedMean = batch_mean,
//   SavedVariance = 1 / sqrt(batch_variance + epsilon).
// With global statistics ((is_test and not trainable_statistics) or
// use_global_stats) it uses Mean / Variance and leaves them unchanged.
// `is_test` appears as INT and as BOOLEAN in Paddle files; both read as bool.
//
// dropout (Fluid's CPU semantics): in training Mask[i] = (u_i >= p) for u_i
// uniform in [0,1); "downgrade_in_infer": Out = X * Mask in training,
// X * (1 - p) in inference; "upscale_in_train": Out = X * Mask / (1 - p) in
// training (0 when p = 1), X in inference.
#include <string>

#include "graph/ir/ops/op_groups.h"

namespace parex {
namespace {

// ---- batch_norm -------------------------------------------------------------

// The channel count of X under data_layout.
StatusOr<int64_t> BatchNormChannels(const ShapeContext& ctx, const Dims& x) {
  if (x.size() < 2 || x.size() > 5) {
    return ctx.Error("X " + DimsToString(x) + " must have rank 2 to 5");
  }
  const std::string layout = ctx.Attr<std::string>("data_layout");
  if (layout == "NCHW" || layout == "AnyLayout") return x[1];
  if (layout == "NHWC") return x.back();
  return ctx.Error("unknown data_layout '" + layout + "'");
}

// Every slot in `slots` that is bound must be a [C] vector.
Status CheckChannelVectors(const ShapeContext& ctx, int64_t c,
                           std::initializer_list<const char*> slots) {
  for (const char* slot : slots) {
    if (!ctx.HasInput(slot)) continue;
    const Dims d = ctx.InputDims(slot);
    if (ctx.IsUnknown(d)) continue;
    if (d.size() != 1 || !ExtentsAgree(d[0], c)) {
      return ctx.Error(std::string(slot) + " has dims " + DimsToString(d) +
                       ", expected [" + std::to_string(c) +
                       "] (one value per channel of X)");
    }
  }
  return Status::Ok();
}

Status InferBatchNorm(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(
      ctx.CheckSameDType({"X", "Scale", "Bias", "Mean", "Variance"}));
  const Dims x = ctx.InputDims("X");
  const DType dtype = ctx.InputDType("X");
  for (const char* out : {"Y", "MeanOut", "VarianceOut", "SavedMean",
                          "SavedVariance", "ReserveSpace"}) {
    ctx.SetOutputDType(out, 0, dtype);
  }
  if (ctx.IsUnknown(x)) return Status::Ok();
  PAREX_ASSIGN_OR_RETURN(int64_t c, BatchNormChannels(ctx, x));
  PAREX_RETURN_IF_ERROR(
      CheckChannelVectors(ctx, c, {"Scale", "Bias", "Mean", "Variance"}));
  if (ctx.HasInput("MomentumTensor") && ctx.IsRuntime() &&
      Numel(ctx.InputDims("MomentumTensor")) != 1) {
    return ctx.Error("MomentumTensor must hold one value");
  }
  ctx.SetOutputDims("Y", 0, x);
  for (const char* out :
       {"MeanOut", "VarianceOut", "SavedMean", "SavedVariance"}) {
    ctx.SetOutputDims(out, 0, {c});
  }
  ctx.SetOutputDims("ReserveSpace", 0, {0});  // cuDNN's; unused on CPU
  return Status::Ok();
}

Status InferBatchNormGrad(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(
      ctx.CheckSameDType({"X", "Scale", "Bias", "SavedMean", "SavedVariance",
                          "Mean", "Variance", "Y@GRAD"}));
  const Dims x = ctx.InputDims("X");
  if (!ctx.IsUnknown(x)) {
    PAREX_ASSIGN_OR_RETURN(int64_t c, BatchNormChannels(ctx, x));
    PAREX_RETURN_IF_ERROR(CheckChannelVectors(
        ctx, c,
        {"Scale", "Bias", "SavedMean", "SavedVariance", "Mean", "Variance"}));
    const Dims dy = ctx.InputDims("Y@GRAD");
    if (!ctx.IsUnknown(dy) && !SameDims(ctx, dy, x)) {
      return ctx.Error("Y@GRAD has dims " + DimsToString(dy) + ", X has " +
                       DimsToString(x));
    }
  }
  const bool global =
      ctx.Attr<bool>("is_test") || ctx.Attr<bool>("use_global_stats");
  if (global && (!ctx.HasInput("Mean") || !ctx.HasInput("Variance"))) {
    return ctx.Error(
        "with global statistics the gradient needs Mean and "
        "Variance");
  }
  return InferGradShapesFromForwardInputs(ctx);
}

// ---- synchronised batch norm's stages (graph/builder/sync_batch_norm.h)
// ------- Their double sums are all-reduced across places between the stages.

// Checks that `slot` is a double vector of `extent` values.
Status CheckSums(const ShapeContext& ctx, const char* slot, int64_t extent) {
  const DType t = ctx.InputDType(slot);
  if (t != DType::kUndefined && t != DType::kFP64) {
    return ctx.Error(std::string(slot) + " must be fp64, got " + DTypeName(t));
  }
  const Dims d = ctx.InputDims(slot);
  if (ctx.IsUnknown(d)) return Status::Ok();
  if (d.size() != 1 || !ExtentsAgree(d[0], extent)) {
    return ctx.Error(std::string(slot) + " has dims " + DimsToString(d) +
                     ", expected [" + std::to_string(extent) + "]");
  }
  return Status::Ok();
}

// Channels of X, or -1 while X's dims are unknown.
StatusOr<int64_t> ChannelsOrUnknown(const ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  if (ctx.IsUnknown(x)) return int64_t{-1};
  return BatchNormChannels(ctx, x);
}

Status InferSyncBnSum(ShapeContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(const int64_t c, ChannelsOrUnknown(ctx));
  ctx.SetOutputDType("Sum", 0, DType::kFP64);
  if (c >= 0) ctx.SetOutputDims("Sum", 0, {c + 1});
  return Status::Ok();
}

Status InferSyncBnSqDev(ShapeContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(const int64_t c, ChannelsOrUnknown(ctx));
  ctx.SetOutputDType("SqDev", 0, DType::kFP64);
  if (c < 0) return Status::Ok();
  PAREX_RETURN_IF_ERROR(CheckSums(ctx, "Sum", c + 1));
  ctx.SetOutputDims("SqDev", 0, {c});
  return Status::Ok();
}

Status InferSyncBnApply(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(InferBatchNorm(ctx));
  PAREX_ASSIGN_OR_RETURN(const int64_t c, ChannelsOrUnknown(ctx));
  if (c < 0) return Status::Ok();
  PAREX_RETURN_IF_ERROR(CheckSums(ctx, "Sum", c + 1));
  return CheckSums(ctx, "SqDev", c);
}

Status InferSyncBnGradSum(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(
      ctx.CheckSameDType({"X", "SavedMean", "SavedVariance", "Y@GRAD"}));
  PAREX_ASSIGN_OR_RETURN(const int64_t c, ChannelsOrUnknown(ctx));
  ctx.SetOutputDType("GradSum", 0, DType::kFP64);
  for (const char* out : {"Scale@GRAD", "Bias@GRAD"}) {
    ctx.SetOutputDType(out, 0, ctx.InputDType("X"));
  }
  if (c < 0) return Status::Ok();
  PAREX_RETURN_IF_ERROR(
      CheckChannelVectors(ctx, c, {"SavedMean", "SavedVariance"}));
  const Dims dy = ctx.InputDims("Y@GRAD");
  if (!ctx.IsUnknown(dy) && !SameDims(ctx, dy, ctx.InputDims("X"))) {
    return ctx.Error("Y@GRAD has dims " + DimsToString(dy) + ", X has " +
                     DimsToString(ctx.InputDims("X")));
  }
  ctx.SetOutputDims("GradSum", 0, {2 * c});
  ctx.SetOutputDims("Scale@GRAD", 0, {c});
  ctx.SetOutputDims("Bias@GRAD", 0, {c});
  return Status::Ok();
}

Status InferSyncBnGradApply(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckSameDType(
      {"X", "Scale", "SavedMean", "SavedVariance", "Y@GRAD"}));
  const Dims x = ctx.InputDims("X");
  ctx.SetOutputDType("X@GRAD", 0, ctx.InputDType("X"));
  PAREX_ASSIGN_OR_RETURN(const int64_t c, ChannelsOrUnknown(ctx));
  if (c < 0) return Status::Ok();
  PAREX_RETURN_IF_ERROR(
      CheckChannelVectors(ctx, c, {"Scale", "SavedMean", "SavedVariance"}));
  PAREX_RETURN_IF_ERROR(CheckSums(ctx, "Sum", c + 1));
  PAREX_RETURN_IF_ERROR(CheckSums(ctx, "GradSum", 2 * c));
  const Dims dy = ctx.InputDims("Y@GRAD");
  if (!ctx.IsUnknown(dy) && !SameDims(ctx, dy, x)) {
    return ctx.Error("Y@GRAD has dims " + DimsToString(dy) + ", X has " +
                     DimsToString(x));
  }
  ctx.SetOutputDims("X@GRAD", 0, x);
  return Status::Ok();
}

OpSchema& BatchNormAttrs(OpSchema& s) {
  return s.Attr("epsilon", 1e-5f)
      .Attr("momentum", 0.9f)
      .Attr("data_layout", std::string("NCHW"))
      .Attr("is_test", false)
      .Attr("use_global_stats", false)
      .Attr("trainable_statistics", false);
}

// ---- layer_norm -------------------------------------------------------------

// X's dims split at begin_norm_axis: rows (left) and the normalised extent.
Status LayerNormSplit(const ShapeContext& ctx, const Dims& x, int64_t* left,
                      int64_t* right) {
  const int axis = ctx.Attr<int>("begin_norm_axis");
  if (axis < 1 || axis > static_cast<int>(x.size())) {
    return ctx.Error("begin_norm_axis " + std::to_string(axis) +
                     " is outside [1, " + std::to_string(x.size()) +
                     "] for X " + DimsToString(x));
  }
  *left = 1;
  *right = 1;
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t& side = static_cast<int>(i) < axis ? *left : *right;
    side = x[i] < 0 || side < 0 ? -1 : side * x[i];
  }
  return Status::Ok();
}

Status CheckLayerNormVectors(const ShapeContext& ctx, int64_t right,
                             std::initializer_list<const char*> slots) {
  for (const char* slot : slots) {
    if (!ctx.HasInput(slot)) continue;
    const Dims d = ctx.InputDims(slot);
    if (ctx.IsUnknown(d) || right < 0) continue;
    if (Numel(d) != right) {
      return ctx.Error(std::string(slot) + " " + DimsToString(d) +
                       " must hold " + std::to_string(right) +
                       " values (X's extent past begin_norm_axis)");
    }
  }
  return Status::Ok();
}

Status InferLayerNorm(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckSameDType({"X", "Scale", "Bias"}));
  const Dims x = ctx.InputDims("X");
  const DType dtype = ctx.InputDType("X");
  for (const char* out : {"Y", "Mean", "Variance"})
    ctx.SetOutputDType(out, 0, dtype);
  if (ctx.IsUnknown(x)) return Status::Ok();
  int64_t left = 0, right = 0;
  PAREX_RETURN_IF_ERROR(LayerNormSplit(ctx, x, &left, &right));
  PAREX_RETURN_IF_ERROR(CheckLayerNormVectors(ctx, right, {"Scale", "Bias"}));
  ctx.SetOutputDims("Y", 0, x);
  ctx.SetOutputDims("Mean", 0, {left});
  ctx.SetOutputDims("Variance", 0, {left});
  return Status::Ok();
}

Status InferLayerNormGrad(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(
      ctx.CheckSameDType({"X", "Scale", "Bias", "Mean", "Variance", "Y@GRAD"}));
  const Dims x = ctx.InputDims("X");
  const DType dtype = ctx.InputDType("X");
  if (!ctx.IsUnknown(x)) {
    int64_t left = 0, right = 0;
    PAREX_RETURN_IF_ERROR(LayerNormSplit(ctx, x, &left, &right));
    PAREX_RETURN_IF_ERROR(CheckLayerNormVectors(ctx, right, {"Scale", "Bias"}));
    for (const char* slot : {"Mean", "Variance"}) {
      const Dims d = ctx.InputDims(slot);
      if (ctx.IsRuntime() && left >= 0 && Numel(d) != left) {
        return ctx.Error(std::string(slot) + " " + DimsToString(d) +
                         " must hold " + std::to_string(left) +
                         " values (one per row)");
      }
    }
    const Dims dy = ctx.InputDims("Y@GRAD");
    if (!ctx.IsUnknown(dy) && !SameDims(ctx, dy, x)) {
      return ctx.Error("Y@GRAD has dims " + DimsToString(dy) + ", X has " +
                       DimsToString(x));
    }
    ctx.SetOutputDims("X@GRAD", 0, x);
  }
  ctx.SetOutputDType("X@GRAD", 0, dtype);
  for (const char* slot : {"Scale", "Bias"}) {
    if (ctx.HasInput(slot)) {
      ctx.SetOutput(std::string(slot) + "@GRAD", ctx.InputDims(slot), dtype);
    }
  }
  return Status::Ok();
}

// ---- dropout ----------------------------------------------------------------

Status CheckDropoutAttrs(const ShapeContext& ctx) {
  const float p = ctx.Attr<float>("dropout_prob");
  if (!(p >= 0.0f && p <= 1.0f)) {
    return ctx.Error("dropout_prob " + std::to_string(p) +
                     " is outside [0, 1]");
  }
  const std::string mode = ctx.Attr<std::string>("dropout_implementation");
  if (mode != "downgrade_in_infer" && mode != "upscale_in_train") {
    return ctx.Error("unknown dropout_implementation '" + mode + "'");
  }
  return Status::Ok();
}

Status InferDropout(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckDropoutAttrs(ctx));
  if (ctx.HasInput("Seed") && ctx.IsRuntime() &&
      Numel(ctx.InputDims("Seed")) < 1) {
    return ctx.Error("Seed holds no value");
  }
  ctx.ShareDimsAndDType("X", "Out");
  // In test mode too when bound: a training program may hold a dropout
  // that is off (is_test) whose gradient op still names the Mask.
  if (!ctx.Attr<bool>("is_test") || ctx.HasOutput("Mask")) {
    ctx.SetOutput("Mask", ctx.InputDims("X"), DType::kUInt8);
  }
  return Status::Ok();
}

Status InferDropoutGrad(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckDropoutAttrs(ctx));
  const Dims dout = ctx.InputDims("Out@GRAD");
  if (!ctx.Attr<bool>("is_test")) {
    if (!ctx.HasInput("Mask")) {
      return ctx.Error("the training-mode gradient needs Mask");
    }
    const Dims mask = ctx.InputDims("Mask");
    if (!ctx.IsUnknown(mask) && !ctx.IsUnknown(dout) &&
        !SameDims(ctx, mask, dout)) {
      return ctx.Error("Mask has dims " + DimsToString(mask) +
                       ", Out@GRAD has " + DimsToString(dout));
    }
    if (ctx.IsRuntime() && ctx.InputDType("Mask") != DType::kUInt8) {
      return ctx.Error("Mask must be uint8");
    }
  }
  ctx.SetOutputDType("X@GRAD", 0, ctx.InputDType("Out@GRAD"));
  if (!ctx.IsUnknown(dout)) ctx.SetOutputDims("X@GRAD", 0, dout);
  return Status::Ok();
}

OpSchema& DropoutAttrs(OpSchema& s) {
  return s.Attr("dropout_prob", 0.5f)
      .Attr("is_test", false)
      .Attr("fix_seed", false)
      .Attr("seed", 0)
      .Attr("dropout_implementation", std::string("downgrade_in_infer"));
}

}  // namespace

void RegisterNormOps(OpSchemaRegistry* r) {
  // A program's sync_batch_norm (Paddle's SyncBatchNorm) has batch_norm's
  // slots; graph/builder/sync_batch_norm.h synchronises it over places.
  for (const std::string type : {"batch_norm", "sync_batch_norm"}) {
    OpSchema bn(type);
    bn.Input("X")
        .Input("Scale")
        .Input("Bias")
        .Input("Mean")
        .Input("Variance")
        .Input("MomentumTensor", kOptional)
        .Output("Y")
        .Output("MeanOut")
        .Output("VarianceOut")
        .Output("SavedMean")
        .Output("SavedVariance")
        .Output("ReserveSpace", kOptional)
        .Inplace("Mean", "MeanOut")
        .Inplace("Variance", "VarianceOut")
        .InferShape(InferBatchNorm)
        .Grad(type + "_grad",
              {"X", "Scale", "Bias", "SavedMean", "SavedVariance", "Mean",
               "Variance", "Y@GRAD"},
              {"X@GRAD", "Scale@GRAD", "Bias@GRAD"});
    r->Add(BatchNormAttrs(bn));

    OpSchema bn_grad(type + "_grad");
    bn_grad.Input("X")
        .Input("Scale")
        .Input("Bias", kOptional)
        .Input("SavedMean")
        .Input("SavedVariance")
        .Input("Mean", kOptional)
        .Input("Variance", kOptional)
        .Input("ReserveSpace", kOptional)
        // Paddle 2.x's grad op also reads the updated running statistics;
        // the gradient does not depend on them.
        .Input("MeanOut", kOptional)
        .Input("VarianceOut", kOptional)
        .Input("Y@GRAD")
        .Output("X@GRAD", kOptional)
        .Output("Scale@GRAD", kOptional)
        .Output("Bias@GRAD", kOptional)
        .InferShape(InferBatchNormGrad);
    r->Add(BatchNormAttrs(bn_grad));
  }

  OpSchema bn_sum("sync_bn_sum");
  bn_sum.Input("X")
      .Output("Sum")
      .InferShape(InferSyncBnSum)
      .KernelDTypeFromInput("X");
  r->Add(BatchNormAttrs(bn_sum));
  OpSchema bn_sq("sync_bn_sq_dev");
  bn_sq.Input("X")
      .Input("Sum")
      .Output("SqDev")
      .InferShape(InferSyncBnSqDev)
      .KernelDTypeFromInput("X");
  r->Add(BatchNormAttrs(bn_sq));
  OpSchema bn_apply("sync_bn_apply");
  bn_apply.Input("X")
      .Input("Scale")
      .Input("Bias")
      .Input("Mean")
      .Input("Variance")
      .Input("MomentumTensor", kOptional)
      .Input("Sum")
      .Input("SqDev")
      .Output("Y")
      .Output("MeanOut")
      .Output("VarianceOut")
      .Output("SavedMean")
      .Output("SavedVariance")
      .Inplace("Mean", "MeanOut")
      .Inplace("Variance", "VarianceOut")
      .InferShape(InferSyncBnApply)
      .KernelDTypeFromInput("X");
  r->Add(BatchNormAttrs(bn_apply));
  OpSchema bn_grad_sum("sync_bn_grad_sum");
  bn_grad_sum.Input("X")
      .Input("SavedMean")
      .Input("SavedVariance")
      .Input("Y@GRAD")
      .Output("GradSum")
      .Output("Scale@GRAD", kOptional)
      .Output("Bias@GRAD", kOptional)
      .InferShape(InferSyncBnGradSum)
      .KernelDTypeFromInput("X");
  r->Add(BatchNormAttrs(bn_grad_sum));
  OpSchema bn_grad_apply("sync_bn_grad_apply");
  bn_grad_apply.Input("X")
      .Input("Scale")
      .Input("SavedMean")
      .Input("SavedVariance")
      .Input("Y@GRAD")
      .Input("Sum")
      .Input("GradSum")
      .Output("X@GRAD")
      .InferShape(InferSyncBnGradApply)
      .KernelDTypeFromInput("X");
  r->Add(BatchNormAttrs(bn_grad_apply));

  OpSchema ln("layer_norm");
  ln.Input("X")
      .Input("Scale", kOptional)
      .Input("Bias", kOptional)
      .Output("Y")
      .Output("Mean")
      .Output("Variance")
      .InferShape(InferLayerNorm)
      .Attr("epsilon", 1e-5f)
      .Attr("begin_norm_axis", 1)
      .Grad("layer_norm_grad",
            {"X", "Scale", "Bias", "Mean", "Variance", "Y@GRAD"},
            {"X@GRAD", "Scale@GRAD", "Bias@GRAD"});
  r->Add(std::move(ln));
  OpSchema ln_grad("layer_norm_grad");
  ln_grad.Input("X")
      .Input("Scale", kOptional)
      .Input("Bias", kOptional)
      .Input("Mean")
      .Input("Variance")
      .Input("Y@GRAD")
      .Output("X@GRAD", kOptional)
      .Output("Scale@GRAD", kOptional)
      .Output("Bias@GRAD", kOptional)
      .InferShape(InferLayerNormGrad)
      .Attr("epsilon", 1e-5f)
      .Attr("begin_norm_axis", 1);
  r->Add(std::move(ln_grad));

  OpSchema dropout("dropout");
  dropout.Input("X")
      .Input("Seed", kOptional)
      .Output("Out")
      .Output("Mask", kOptional)
      .InferShape(InferDropout)
      .Grad("dropout_grad", {"Mask", "Out@GRAD"}, {"X@GRAD"});
  r->Add(DropoutAttrs(dropout));

  OpSchema dropout_grad("dropout_grad");
  dropout_grad.Input("Mask", kOptional)
      .Input("Out@GRAD")
      .Output("X@GRAD")
      .InferShape(InferDropoutGrad)
      .KernelDTypeFromInput("Out@GRAD");
  r->Add(DropoutAttrs(dropout_grad));
}

}  // namespace parex
