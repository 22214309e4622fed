// Small math ops that optimizers, learning-rate schedules and gradient
// clipping compose (Fluid builds them the same way):
//  - increment: Out = X + step for a one-element X (the step counter
//    `@LR_DECAY_COUNTER@`; usually in place, Out = X). No gradient op.
//  - sqrt, floor: element-wise, with Fluid's gradient ops (sqrt_grad reads
//    Out; floor_grad reads only Out@GRAD and writes zeros).
//  - squared_l2_norm: Out [1] = sum(X^2); squared_l2_norm_grad reads X.
// Comparison and binary element-wise ops with broadcasting (less_than,
// elementwise_max/min/pow) live with the other elementwise ops.
#include <string>

#include "graph/ir/ops/op_groups.h"

namespace parex {
namespace {

// `slot` holds one element (undeclared dims and unknown extents pass at
// compile time).
Status CheckOneElement(const ShapeContext& ctx, const char* slot) {
  const Dims dims = ctx.InputDims(slot);
  if (!Known(ctx, dims)) return Status::Ok();
  const int64_t n = Numel(dims);
  if (n != 1 && (n >= 0 || ctx.IsRuntime())) {
    return ctx.Error(std::string(slot) + " must hold one element, got " +
                     DimsToString(dims));
  }
  return Status::Ok();
}

Status InferIncrement(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckOneElement(ctx, "X"));
  ctx.ShareDimsAndDType("X", "Out");
  return Status::Ok();
}

Status InferUnary(ShapeContext& ctx) {
  ctx.ShareDimsAndDType("X", "Out");
  return Status::Ok();
}

// X@GRAD takes the dims and dtype of `source` (Out, or Out@GRAD itself),
// whose dims must match Out@GRAD's.
InferShapeFn InferUnaryGrad(std::string source) {
  return [source](ShapeContext& ctx) -> Status {
    const Dims a = ctx.InputDims(source);
    const Dims g = ctx.InputDims("Out@GRAD");
    if (Known(ctx, a) && Known(ctx, g) && !SameDims(ctx, a, g)) {
      return ctx.Error("Out@GRAD " + DimsToString(g) + " does not match " +
                       source + " " + DimsToString(a));
    }
    ctx.SetOutput("X@GRAD", a, ctx.InputDType(source));
    return Status::Ok();
  };
}

Status InferSquaredL2Norm(ShapeContext& ctx) {
  ctx.SetOutput("Out", {1}, ctx.InputDType("X"));
  return Status::Ok();
}

Status InferSquaredL2NormGrad(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckOneElement(ctx, "Out@GRAD"));
  ctx.SetOutput("X@GRAD", ctx.InputDims("X"), ctx.InputDType("X"));
  return Status::Ok();
}

// An element-wise op with Fluid's activation-style gradient op reading
// `grad_source` ("Out") besides Out@GRAD, or only Out@GRAD when empty.
void AddUnary(OpSchemaRegistry* r, const std::string& type,
              const std::string& grad_source) {
  std::vector<std::string> grad_inputs;
  if (!grad_source.empty()) grad_inputs.push_back(grad_source);
  grad_inputs.push_back("Out@GRAD");
  r->Add(OpSchema(type)
             .Input("X")
             .Output("Out")
             .InferShape(InferUnary)
             .Grad(type + "_grad", grad_inputs, {"X@GRAD"}));
  OpSchema grad(type + "_grad");
  for (const std::string& slot : grad_inputs) grad.Input(slot);
  const std::string source = grad_source.empty() ? "Out@GRAD" : grad_source;
  grad.Output("X@GRAD")
      .InferShape(InferUnaryGrad(source))
      .KernelDTypeFromInput("Out@GRAD");
  r->Add(std::move(grad));
}

}  // namespace

void RegisterMathOps(OpSchemaRegistry* r) {
  r->Add(OpSchema("increment")
             .Input("X")
             .Output("Out")
             .Inplace("X", "Out")
             .Attr("step", 1.0f)
             .InferShape(InferIncrement));
  AddUnary(r, "sqrt", "Out");
  AddUnary(r, "floor", "");
  r->Add(OpSchema("squared_l2_norm")
             .Input("X")
             .Output("Out")
             .InferShape(InferSquaredL2Norm)
             .Grad("squared_l2_norm_grad", {"X", "Out@GRAD"}, {"X@GRAD"}));
  r->Add(OpSchema("squared_l2_norm_grad")
             .Input("X")
             .Input("Out@GRAD")
             .Output("X@GRAD")
             .InferShape(InferSquaredL2NormGrad)
             .KernelDTypeFromInput("X"));
}

}  // namespace parex
