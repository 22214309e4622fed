// elementwise_add/sub/mul/div/max/min/pow and their gradients, and the
// comparisons less_than and equal (Out bool).
//
// All but equal broadcast by Fluid's `axis` rule: Out has
// X's dims; Y's dims, less trailing 1s, line up with X's dims starting at
// `axis` (-1: rank(X) - rank(Y)), each equal to X's extent or 1. Broadcasting
// both operands (numpy style) is not supported. The kernels apply the same rule
// (kernels/cpu/broadcast.h).
//
// equal follows Paddle 2.6's comparisons: either operand broadcasts
// (broadcast_spec.h), and floats are equal within 1e-8 (an infinity only to
// itself, NaN to nothing; the kernel's rule).
#include <string>

#include "graph/ir/ops/op_groups.h"
#include "graph/ir/spec/broadcast_spec.h"

namespace parex {
namespace {

// Checks that Y broadcasts into X under the rule above. Unknown extents (-1)
// and undeclared dims ({} at compile time) are accepted.
Status CheckBroadcast(const ShapeContext& ctx, const Dims& x, const Dims& y,
                      const char* x_name, const char* y_name) {
  int axis = ctx.Attr<int>("axis");
  // The attribute's range is checked whether or not the dims are known.
  if (axis < -1 || axis > static_cast<int>(kMaxRank)) {
    return ctx.Error("axis " + std::to_string(axis) + " must be in [-1, " +
                     std::to_string(kMaxRank) + "]");
  }
  if (!ctx.IsRuntime() && (x.empty() || y.empty())) return Status::Ok();
  const int x_rank = static_cast<int>(x.size());
  const int y_rank = static_cast<int>(y.size());
  int trimmed = y_rank;
  while (trimmed > 0 && y[trimmed - 1] == 1) --trimmed;
  if (axis < -1) {
    return ctx.Error("axis " + std::to_string(axis) + " must be >= -1");
  }
  if (axis == -1) axis = x_rank - y_rank;
  if (trimmed == 0) return Status::Ok();  // Y holds one value
  auto mismatch = [&](const std::string& why) {
    return ctx.Error(std::string(y_name) + " " + DimsToString(y) +
                     " cannot be broadcast to " + x_name + " " +
                     DimsToString(x) + " at axis " +
                     std::to_string(ctx.Attr<int>("axis")) + ": " + why);
  };
  if (axis < 0 || axis > x_rank - trimmed) {
    return mismatch(std::string(y_name) + " has more dims than " + x_name +
                    " has from the axis on");
  }
  for (int i = 0; i < trimmed; ++i) {
    const int64_t ye = y[i];
    const int64_t xe = x[axis + i];
    if (ExtentsAgree(xe, ye) || ye == 1) continue;
    return mismatch("extent " + std::to_string(ye) +
                    " != " + std::to_string(xe) + " at dim " +
                    std::to_string(axis + i) + " of " + x_name);
  }
  return Status::Ok();
}

Status CheckSameDType(const ShapeContext& ctx, const char* a, const char* b) {
  const DType da = ctx.InputDType(a);
  const DType db = ctx.InputDType(b);
  if (da != DType::kUndefined && db != DType::kUndefined && da != db) {
    return ctx.Error(std::string("input ") + a + " is " + DTypeName(da) +
                     " but " + b + " is " + DTypeName(db));
  }
  return Status::Ok();
}

Status InferElementwise(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckSameDType(ctx, "X", "Y"));
  PAREX_RETURN_IF_ERROR(
      CheckBroadcast(ctx, ctx.InputDims("X"), ctx.InputDims("Y"), "X", "Y"));
  ctx.ShareDimsAndDType("X", "Out");
  return Status::Ok();
}

// X@GRAD takes X's dims (Out@GRAD's when X is not bound); Y@GRAD takes Y's.
Status InferElementwiseGrad(ShapeContext& ctx) {
  const char* full = ctx.HasInput("X") ? "X" : "Out@GRAD";
  PAREX_RETURN_IF_ERROR(CheckSameDType(ctx, "Out@GRAD", "Y"));
  PAREX_RETURN_IF_ERROR(CheckBroadcast(ctx, ctx.InputDims("Out@GRAD"),
                                       ctx.InputDims("Y"), "Out@GRAD", "Y"));
  if (ctx.HasInput("X")) {
    const Dims x = ctx.InputDims("X");
    const Dims dout = ctx.InputDims("Out@GRAD");
    bool agree = x.size() == dout.size();
    for (size_t i = 0; agree && i < x.size(); ++i) {
      agree = ExtentsAgree(x[i], dout[i]);
    }
    if (!agree && (ctx.IsRuntime() || (!x.empty() && !dout.empty()))) {
      return ctx.Error("Out@GRAD " + DimsToString(dout) + " does not match X " +
                       DimsToString(x));
    }
  }
  ctx.SetOutput("X@GRAD", ctx.InputDims(full), ctx.InputDType(full));
  ctx.SetOutput("Y@GRAD", ctx.InputDims("Y"), ctx.InputDType("Y"));
  return Status::Ok();
}

Status InferCompare(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckSameDType(ctx, "X", "Y"));
  PAREX_RETURN_IF_ERROR(
      CheckBroadcast(ctx, ctx.InputDims("X"), ctx.InputDims("Y"), "X", "Y"));
  ctx.SetOutput("Out", ctx.InputDims("X"), DType::kBool);
  return Status::Ok();
}

Status InferEqual(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckSameDType(ctx, "X", "Y"));
  const Dims x = ctx.InputDims("X");
  const Dims y = ctx.InputDims("Y");
  if (ctx.IsUnknown(x) || ctx.IsUnknown(y)) {
    ctx.SetOutput("Out", {}, DType::kBool);
    return Status::Ok();
  }
  StatusOr<BroadcastSpec> spec = BroadcastBoth(x, y, ctx.Attr<int>("axis"));
  if (!spec.ok()) return ctx.Error(spec.status().message());
  ctx.SetOutput("Out", spec->out, DType::kBool);
  return Status::Ok();
}

void AddElementwise(OpSchemaRegistry* r, const std::string& type,
                    std::vector<std::string> grad_inputs) {
  r->Add(OpSchema(type)
             .Input("X")
             .Input("Y")
             .Output("Out")
             .Inplace("X", "Out")
             .Attr("axis", -1)
             .InferShape(InferElementwise)
             .Grad(type + "_grad", grad_inputs, {"X@GRAD", "Y@GRAD"}));
  OpSchema grad(type + "_grad");
  for (const std::string& slot : grad_inputs) {
    // For add/sub/div, X only gives the shape of X@GRAD, which Out@GRAD
    // gives as well; Paddle leaves it out of some grad ops
    // (elementwise_div_grad before 2.0). The kernels of mul/max/min/pow,
    // whose gradients read X's values, report a missing X.
    grad.Input(slot, slot == "X" ? kOptional : kRequired);
  }
  grad.Output("X@GRAD", kOptional)
      .Output("Y@GRAD", kOptional)
      .Attr("axis", -1)
      .InferShape(InferElementwiseGrad)
      .KernelDTypeFromInput("Out@GRAD");
  r->Add(std::move(grad));
}

}  // namespace

void RegisterElementwiseOps(OpSchemaRegistry* r) {
  AddElementwise(r, "elementwise_add", {"X", "Y", "Out@GRAD"});
  AddElementwise(r, "elementwise_sub", {"X", "Y", "Out@GRAD"});
  AddElementwise(r, "elementwise_mul", {"X", "Y", "Out@GRAD"});
  AddElementwise(r, "elementwise_div", {"X", "Y", "Out", "Out@GRAD"});
  AddElementwise(r, "elementwise_max", {"X", "Y", "Out@GRAD"});
  AddElementwise(r, "elementwise_min", {"X", "Y", "Out@GRAD"});
  AddElementwise(r, "elementwise_pow", {"X", "Y", "Out@GRAD"});
  // No gradient op: the output is boolean.
  r->Add(OpSchema("less_than")
             .Input("X")
             .Input("Y")
             .Output("Out")
             .Attr("axis", -1)
             .Attr("force_cpu", false)
             .InferShape(InferCompare));
  r->Add(OpSchema("equal")
             .Input("X")
             .Input("Y")
             .Output("Out")
             .Attr("axis", -1)
             .Attr("force_cpu", false)
             .InferShape(InferEqual));
}

}  // namespace parex
