// Element-wise activations relu, sigmoid, tanh and square, and their Fluid
// gradient ops. relu/sigmoid/tanh gradients read Out (their derivative is a
// function of the output); square's reads X.
#include <string>

#include "graph/ir/ops/op_groups.h"

namespace parex {
namespace {

Status InferUnary(ShapeContext& ctx) {
  ctx.ShareDimsAndDType("X", "Out");
  return Status::Ok();
}

// X@GRAD takes the dims of `source`, which must match Out@GRAD's.
InferShapeFn InferUnaryGrad(std::string source) {
  return [source](ShapeContext& ctx) -> Status {
    const Dims a = ctx.InputDims(source);
    const Dims g = ctx.InputDims("Out@GRAD");
    bool agree = a.size() == g.size();
    for (size_t i = 0; agree && i < a.size(); ++i) {
      agree = ExtentsAgree(a[i], g[i]);
    }
    if (!agree && (ctx.IsRuntime() || (!a.empty() && !g.empty()))) {
      return ctx.Error("Out@GRAD " + DimsToString(g) + " does not match " +
                       source + " " + DimsToString(a));
    }
    ctx.SetOutput("X@GRAD", a, ctx.InputDType(source));
    return Status::Ok();
  };
}

void AddActivation(OpSchemaRegistry* r, const std::string& type,
                   const std::string& grad_source) {
  r->Add(OpSchema(type)
             .Input("X")
             .Output("Out")
             .Inplace("X", "Out")
             .InferShape(InferUnary)
             .Grad(type + "_grad", {grad_source, "Out@GRAD"}, {"X@GRAD"}));
  r->Add(OpSchema(type + "_grad")
             .Input(grad_source)
             .Input("Out@GRAD")
             .Output("X@GRAD")
             .InferShape(InferUnaryGrad(grad_source)));
}

}  // namespace

void RegisterActivationOps(OpSchemaRegistry* r) {
  AddActivation(r, "relu", "Out");
  AddActivation(r, "sigmoid", "Out");
  AddActivation(r, "tanh", "Out");
  AddActivation(r, "square", "X");
}

}  // namespace parex
