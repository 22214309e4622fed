// elementwise_add/sub/mul/div/max/min/pow and their gradients, and the
// comparisons less_than and equal (Out bool).
//
// All but equal broadcast by ElementwiseBroadcast (broadcast_spec.h): at
// axis -1 numpy's rule, either operand broadcasting (Out [3,4] for X [3,1]
// and Y [1,4]); at an explicit axis Fluid's, Y's dims less trailing 1s lining
// up with X's from `axis` and Out taking X's dims. The kernels apply the same
// rule.
//
// equal follows Paddle 2.6's comparisons: either operand broadcasts
// (BroadcastBoth), and floats are equal within 1e-8 (an infinity only to
// itself, NaN to nothing; the kernel's rule).
#include <string>

#include "graph/ir/ops/op_groups.h"
#include "graph/ir/spec/broadcast_spec.h"

namespace parex {
namespace {

// Out's dims when X and Y broadcast under the rule above. Unknown extents
// (-1) pair with anything; an operand declared without dims ({} at compile
// time) gives Out X's dims (unknown when X's are).
StatusOr<Dims> BroadcastDims(const ShapeContext& ctx, const Dims& x,
                             const Dims& y, const char* x_name,
                             const char* y_name) {
  const int axis = ctx.Attr<int>("axis");
  // The attribute's range is checked whether or not the dims are known.
  if (axis < -1 || axis > static_cast<int>(kMaxRank)) {
    return ctx.Error("axis " + std::to_string(axis) + " must be in [-1, " +
                     std::to_string(kMaxRank) + "]");
  }
  if (!ctx.IsRuntime() && (x.empty() || y.empty())) return x;
  StatusOr<BroadcastSpec> spec =
      ElementwiseBroadcastSpec(x, y, axis, x_name, y_name);
  if (!spec.ok()) return ctx.Error(spec.status().message());
  return std::move(spec->out);
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
  PAREX_ASSIGN_OR_RETURN(Dims out, BroadcastDims(ctx, ctx.InputDims("X"),
                                                 ctx.InputDims("Y"), "X", "Y"));
  ctx.SetOutput("Out", out, ctx.InputDType("X"));
  return Status::Ok();
}

// X@GRAD takes X's dims, Y@GRAD Y's; Out@GRAD must have Out's. Without X
// (Paddle leaves it out of some grad ops: elementwise_div_grad before 2.0),
// X had Out@GRAD's dims: X@GRAD takes them and only Y may have broadcast.
Status InferElementwiseGrad(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckSameDType(ctx, "Out@GRAD", "Y"));
  const bool has_x = ctx.HasInput("X");
  const char* x_slot = has_x ? "X" : "Out@GRAD";
  const Dims x = ctx.InputDims(x_slot);
  const Dims dout = ctx.InputDims("Out@GRAD");
  PAREX_ASSIGN_OR_RETURN(
      Dims out, BroadcastDims(ctx, x, ctx.InputDims("Y"), x_slot, "Y"));
  bool agree = out.size() == dout.size();
  for (size_t i = 0; agree && i < out.size(); ++i) {
    agree = ExtentsAgree(out[i], dout[i]);
  }
  if (!agree && (ctx.IsRuntime() || (!out.empty() && !dout.empty()))) {
    return ctx.Error("Out@GRAD " + DimsToString(dout) + " does not match Out " +
                     DimsToString(out) + " of " + x_slot + " " +
                     DimsToString(x) + " and Y " +
                     DimsToString(ctx.InputDims("Y")));
  }
  ctx.SetOutput("X@GRAD", x, ctx.InputDType(x_slot));
  ctx.SetOutput("Y@GRAD", ctx.InputDims("Y"), ctx.InputDType("Y"));
  return Status::Ok();
}

Status InferCompare(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckSameDType(ctx, "X", "Y"));
  PAREX_ASSIGN_OR_RETURN(Dims out, BroadcastDims(ctx, ctx.InputDims("X"),
                                                 ctx.InputDims("Y"), "X", "Y"));
  ctx.SetOutput("Out", out, DType::kBool);
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

// logical_and/or/xor: InferEqual's broadcast (no axis attribute).
Status InferLogical(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckSameDType(ctx, "X", "Y"));
  const Dims x = ctx.InputDims("X");
  const Dims y = ctx.InputDims("Y");
  if (ctx.IsUnknown(x) || ctx.IsUnknown(y)) {
    ctx.SetOutput("Out", {}, DType::kBool);
    return Status::Ok();
  }
  StatusOr<BroadcastSpec> spec = BroadcastBoth(x, y, -1);
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
  // Integer arithmetic on shapes (paddle.shape(x)[1] // 2): no gradients.
  for (const char* type : {"elementwise_floordiv", "elementwise_mod"}) {
    r->Add(OpSchema(type)
               .Input("X")
               .Input("Y")
               .Output("Out")
               .Attr("axis", -1)
               .InferShape(InferElementwise));
  }
  // No gradient op: the output is boolean.
  r->Add(OpSchema("less_than")
             .Input("X")
             .Input("Y")
             .Output("Out")
             .Attr("axis", -1)
             .Attr("force_cpu", false)
             .InferShape(InferCompare));
  // Both operands broadcast (numpy's rule), as Paddle 2.x's comparisons.
  for (const char* type :
       {"equal", "not_equal", "greater_than", "greater_equal", "less_equal"}) {
    r->Add(OpSchema(type)
               .Input("X")
               .Input("Y")
               .Output("Out")
               .Attr("axis", -1)
               .Attr("force_cpu", false)
               .InferShape(InferEqual));
  }
  for (const char* type : {"logical_and", "logical_or", "logical_xor"}) {
    r->Add(OpSchema(type).Input("X").Input("Y").Output("Out").InferShape(
        InferLogical));
  }
  r->Add(OpSchema("logical_not")
             .Input("X")
             .Output("Out")
             .InferShape([](ShapeContext& ctx) {
               ctx.SetOutput("Out", ctx.InputDims("X"), DType::kBool);
               return Status::Ok();
             }));
}

}  // namespace parex
