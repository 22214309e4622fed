// Element-wise activations and their Fluid gradient ops (Paddle 2.6's slots
// and attributes): relu, sigmoid, tanh and exp gradients read Out (their
// derivative is a function of the output); the others' read X.
#include <functional>
#include <string>
#include <vector>

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

// `grad_source` is the forward value the gradient op reads ("X", "Out", or
// "Out@GRAD" for a gradient of zero); `attrs` adds the op's attributes (with
// Paddle's defaults) to the op and its gradient op; `extra_inputs` are
// optional inputs of both (clip's Min and Max tensors); `grad_also` optional
// inputs Paddle's gradient op has besides (silu_grad's and elu_grad's Out,
// which parex's kernels do not need).
void AddActivation(OpSchemaRegistry* r, const std::string& type,
                   const std::string& grad_source,
                   const std::function<void(OpSchema&)>& attrs = {},
                   const std::vector<std::string>& extra_inputs = {},
                   const std::vector<std::string>& grad_also = {}) {
  OpSchema op(type);
  op.Input("X");
  for (const std::string& in : extra_inputs) op.Input(in, kOptional);
  std::vector<std::string> grad_reads;
  if (grad_source != "Out@GRAD") grad_reads.push_back(grad_source);
  grad_reads.insert(grad_reads.end(), extra_inputs.begin(), extra_inputs.end());
  grad_reads.insert(grad_reads.end(), grad_also.begin(), grad_also.end());
  grad_reads.push_back("Out@GRAD");
  op.Output("Out")
      .Inplace("X", "Out")
      .InferShape(InferUnary)
      .Grad(type + "_grad", grad_reads, {"X@GRAD"});
  OpSchema grad(type + "_grad");
  if (grad_source != "Out@GRAD") grad.Input(grad_source);
  for (const std::string& in : extra_inputs) grad.Input(in, kOptional);
  for (const std::string& in : grad_also) grad.Input(in, kOptional);
  grad.Input("Out@GRAD")
      .Output("X@GRAD")
      .InferShape(InferUnaryGrad(grad_source));
  if (attrs) {
    attrs(op);
    attrs(grad);
  }
  r->Add(std::move(op));
  r->Add(std::move(grad));
}

// paddle's further element-wise ops (kernels/cpu/unary_math_kernels.cc),
// with Paddle 2.6's attributes and gradient inputs (sqrt and floor are
// math_ops.cc's).
void RegisterUnaryMathOps(OpSchemaRegistry* r) {
  for (const char* type : {"rsqrt", "reciprocal", "expm1"}) {
    AddActivation(r, type, "Out");
  }
  for (const char* type :
       {"sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "erf",
        "log2", "log10", "log1p", "softsign", "tanh_shrink", "logsigmoid"}) {
    AddActivation(r, type, "X");
  }
  for (const char* type : {"ceil", "round", "sign"}) {
    AddActivation(r, type, "Out@GRAD");
  }
  AddActivation(r, "silu", "X", {}, {}, {"Out"});
  AddActivation(r, "pow", "X", [](OpSchema& s) { s.Attr("factor", 1.0f); },
                {"FactorTensor"});
  AddActivation(r, "relu6", "Out",
                [](OpSchema& s) { s.Attr("threshold", 6.0f); });
  AddActivation(r, "hard_sigmoid", "Out", [](OpSchema& s) {
    s.Attr("slope", 0.1666667f).Attr("offset", 0.5f);
  });
  AddActivation(r, "softplus", "X", [](OpSchema& s) {
    s.Attr("beta", 1.0f).Attr("threshold", 20.0f);
  });
  AddActivation(r, "mish", "X",
                [](OpSchema& s) { s.Attr("threshold", 20.0f); });
  AddActivation(r, "elu", "X", [](OpSchema& s) { s.Attr("alpha", 1.0f); }, {},
                {"Out"});
  AddActivation(r, "celu", "X", [](OpSchema& s) { s.Attr("alpha", 1.0f); });
  AddActivation(r, "selu", "Out", [](OpSchema& s) {
    s.Attr("scale", 1.0507009873554804934193349852946f)
        .Attr("alpha", 1.6732632423543772848170429916717f);
  });
  AddActivation(r, "hard_shrink", "X",
                [](OpSchema& s) { s.Attr("threshold", 0.5f); });
  AddActivation(r, "softshrink", "X",
                [](OpSchema& s) { s.Attr("lambda", 0.5f); });
  AddActivation(r, "thresholded_relu", "X",
                [](OpSchema& s) { s.Attr("threshold", 1.0f); });
  AddActivation(r, "brelu", "X", [](OpSchema& s) {
    s.Attr("t_min", 0.0f).Attr("t_max", 24.0f);
  });
}

}  // namespace

void RegisterActivationOps(OpSchemaRegistry* r) {
  AddActivation(r, "relu", "Out");
  AddActivation(r, "sigmoid", "Out");
  AddActivation(r, "tanh", "Out");
  AddActivation(r, "square", "X");
  AddActivation(r, "exp", "Out");
  AddActivation(r, "log", "X");
  AddActivation(r, "abs", "X");
  AddActivation(r, "gelu", "X",
                [](OpSchema& s) { s.Attr("approximate", false); });
  AddActivation(r, "leaky_relu", "X",
                [](OpSchema& s) { s.Attr("alpha", 0.02f); });
  AddActivation(r, "hard_swish", "X", [](OpSchema& s) {
    s.Attr("threshold", 6.0f).Attr("scale", 6.0f).Attr("offset", 3.0f);
  });
  AddActivation(r, "swish", "X", [](OpSchema& s) { s.Attr("beta", 1.0f); });
  AddActivation(r, "clip", "X",
                [](OpSchema& s) { s.Attr("min", 0.0f).Attr("max", 0.0f); },
                {"Min", "Max"});
  RegisterUnaryMathOps(r);
}

}  // namespace parex
