// Optimizer ops: sgd, momentum and adam. Their outputs are usually the same
// variables as their inputs (ParamOut is Param, ...); the kernels are written
// for that. Dense gradients only (no SelectedRows).
#include <string>

#include "graph/ir/ops/op_groups.h"

namespace parex {
namespace {

// `slot` has Param's dims.
Status CheckLikeParam(const ShapeContext& ctx, const char* slot) {
  const Dims param = ctx.InputDims("Param");
  const Dims dims = ctx.InputDims(slot);
  if (Known(ctx, param) && Known(ctx, dims) && !SameDims(ctx, param, dims)) {
    return ctx.Error(std::string(slot) + " " + DimsToString(dims) +
                     " does not match Param " + DimsToString(param));
  }
  return Status::Ok();
}

// `slot`, when bound, holds one element (an unknown extent is accepted).
Status CheckScalar(const ShapeContext& ctx, const char* slot) {
  if (!ctx.HasInput(slot)) return Status::Ok();
  const Dims dims = ctx.InputDims(slot);
  if (!Known(ctx, dims)) return Status::Ok();
  const int64_t n = Numel(dims);
  if (n != 1 && n >= 0) {
    return ctx.Error(std::string(slot) + " must hold one element, got " +
                     DimsToString(dims));
  }
  return Status::Ok();
}

void ShareWith(ShapeContext& ctx, const char* in, const char* out) {
  ctx.SetOutput(out, ctx.InputDims(in), ctx.InputDType(in));
}

Status InferSgd(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckLikeParam(ctx, "Grad"));
  PAREX_RETURN_IF_ERROR(CheckScalar(ctx, "LearningRate"));
  ShareWith(ctx, "Param", "ParamOut");
  return Status::Ok();
}

Status InferMomentum(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckLikeParam(ctx, "Grad"));
  PAREX_RETURN_IF_ERROR(CheckLikeParam(ctx, "Velocity"));
  PAREX_RETURN_IF_ERROR(CheckScalar(ctx, "LearningRate"));
  const std::string method = ctx.Attr<std::string>("regularization_method");
  if (!method.empty() && method != "l2_decay") {
    return ctx.Error("regularization_method '" + method +
                     "' is not supported (only \"\" and \"l2_decay\")");
  }
  ShareWith(ctx, "Param", "ParamOut");
  ShareWith(ctx, "Velocity", "VelocityOut");
  return Status::Ok();
}

Status InferAdam(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckLikeParam(ctx, "Grad"));
  const Dims param = ctx.InputDims("Param");
  for (int i = 0; i < ctx.InputCount("GradAddends"); ++i) {
    const Dims dims = ctx.InputDims("GradAddends", i);
    if (Known(ctx, param) && Known(ctx, dims) && !SameDims(ctx, param, dims)) {
      return ctx.Error("GradAddends #" + std::to_string(i) + " " +
                       DimsToString(dims) + " does not match Param " +
                       DimsToString(param));
    }
  }
  PAREX_RETURN_IF_ERROR(CheckLikeParam(ctx, "Moment1"));
  PAREX_RETURN_IF_ERROR(CheckLikeParam(ctx, "Moment2"));
  for (const char* slot : {"LearningRate", "Beta1Pow", "Beta2Pow",
                           "Beta1Tensor", "Beta2Tensor", "EpsilonTensor"}) {
    PAREX_RETURN_IF_ERROR(CheckScalar(ctx, slot));
  }
  ShareWith(ctx, "Param", "ParamOut");
  ShareWith(ctx, "Moment1", "Moment1Out");
  ShareWith(ctx, "Moment2", "Moment2Out");
  ShareWith(ctx, "Beta1Pow", "Beta1PowOut");
  ShareWith(ctx, "Beta2Pow", "Beta2PowOut");
  return Status::Ok();
}

}  // namespace

void RegisterOptimizerOps(OpSchemaRegistry* r) {
  r->Add(OpSchema("sgd")
             .Input("Param")
             .Input("LearningRate")
             .Input("Grad")
             .Output("ParamOut")
             .Inplace("Param", "ParamOut")
             .InferShape(InferSgd)
             .KernelDTypeFromInput("Param"));
  r->Add(OpSchema("momentum")
             .Input("Param")
             .Input("Grad")
             .Input("Velocity")
             .Input("LearningRate")
             .Output("ParamOut")
             .Output("VelocityOut")
             .Inplace("Param", "ParamOut")
             .Inplace("Velocity", "VelocityOut")
             .RequiredAttr("mu", proto::FLOAT)
             .Attr("use_nesterov", false)
             .Attr("regularization_method", std::string())
             .Attr("regularization_coeff", 0.0f)
             .Attr("rescale_grad", 1.0f)
             .Attr("multi_precision", false)
             .InferShape(InferMomentum)
             .KernelDTypeFromInput("Param"));
  r->Add(OpSchema("adam")
             .Input("Param")
             .Input("Grad")
             .Input("LearningRate")
             .Input("Moment1")
             .Input("Moment2")
             .Input("Beta1Pow")
             .Input("Beta2Pow")
             .Input("Beta1Tensor", kOptional)
             .Input("Beta2Tensor", kOptional)
             .Input("EpsilonTensor", kOptional)
             // parex's own: gradients added onto Grad in order first (Reduce
             // mode's optimizer slices, graph/ssa/optimizer_slices.h).
             .Input("GradAddends", kOptional | kDuplicable)
             .Output("ParamOut")
             .Output("Moment1Out")
             .Output("Moment2Out")
             .Output("Beta1PowOut", kOptional)
             .Output("Beta2PowOut", kOptional)
             .Inplace("Param", "ParamOut")
             .Inplace("Moment1", "Moment1Out")
             .Inplace("Moment2", "Moment2Out")
             .Inplace("Beta1Pow", "Beta1PowOut")
             .Inplace("Beta2Pow", "Beta2PowOut")
             .Attr("beta1", 0.9f)
             .Attr("beta2", 0.999f)
             .Attr("epsilon", 1e-8f)
             .Attr("lazy_mode", false)
             .Attr("min_row_size_to_use_multithread", int64_t{1000})
             .Attr("multi_precision", false)
             .Attr("use_global_beta_pow", false)
             .InferShape(InferAdam)
             .KernelDTypeFromInput("Param"));
}

}  // namespace parex
