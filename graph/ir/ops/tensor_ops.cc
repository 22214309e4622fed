// Paddle 2.x ops that assemble, pick or repeat elements: stack, gather,
// expand_v2 and where, with their gradient ops (Paddle 2.6's slots and
// attributes, its dims rules and messages).
//
// stack: n inputs of equal dims become Y with a new dim of extent n at
//   `axis`, in [-(rank+1), rank] (negative counts from the end of Y's dims).
// gather: Out takes X's slices at the indices Index holds (int32 or int64,
//   1-D or [N, 1]) along `axis`; each index in [0, extent). The Axis tensor
//   input is refused (an attribute only).
// expand_v2: `shape` holds at least rank(X) entries; X's dims line up with
//   its last ones. An entry is X's extent, -1 (keep it) or any positive
//   extent where X's is 1; leading entries (new dims) are positive. The
//   Shape / expand_shapes_tensor inputs give it at run time instead.
// where: Out = Condition ? X : Y, all three of equal dims (Paddle's Python
//   layer expands them first), Condition bool.
#include <algorithm>
#include <string>
#include <vector>

#include "graph/ir/ops/op_groups.h"
#include "graph/ir/spec/value_inputs.h"

namespace parex {
namespace {

int Rank(const Dims& d) { return static_cast<int>(d.size()); }

Status RejectTensorInputs(const ShapeContext& ctx,
                          std::initializer_list<const char*> slots) {
  for (const char* slot : slots) {
    if (ctx.HasInput(slot)) {
      return Unimplemented(
          ctx.op().Label() + ": input '" + slot +
          "' (a tensor-valued attribute) is not supported; set the attribute");
    }
  }
  return Status::Ok();
}

// ---- stack ------------------------------------------------------------------

// Y's dims: X's with the stacked extent inserted at `axis`.
StatusOr<Dims> StackDims(const ShapeContext& ctx) {
  const int n = ctx.InputCount("X");
  if (n < 1) return ctx.Error("X binds no variable");
  const Dims first = ctx.InputDims("X", 0);
  for (int i = 1; i < n; ++i) {
    const Dims d = ctx.InputDims("X", i);
    if (!ctx.IsUnknown(d) && !SameDims(ctx, d, first)) {
      return ctx.Error("X[" + std::to_string(i) + "] " + DimsToString(d) +
                       " differs from X[0] " + DimsToString(first) +
                       "; stacked inputs have equal dims");
    }
    if (ctx.IsRuntime() && ctx.InputDType("X", i) != ctx.InputDType("X", 0)) {
      return ctx.Error("X[" + std::to_string(i) + "] is " +
                       DTypeName(ctx.InputDType("X", i)) + ", X[0] is " +
                       DTypeName(ctx.InputDType("X", 0)));
    }
  }
  const int rank = Rank(first);
  const int axis = ctx.Attr<int>("axis");
  if (axis < -(rank + 1) || axis > rank) {
    return ctx.Error("axis " + std::to_string(axis) + " is outside [" +
                     std::to_string(-(rank + 1)) + ", " + std::to_string(rank) +
                     "] for inputs of rank " + std::to_string(rank));
  }
  Dims y = first;
  y.insert(y.begin() + (axis < 0 ? axis + rank + 1 : axis), n);
  return y;
}

Status InferStack(ShapeContext& ctx) {
  ctx.SetOutputDType("Y", 0, ctx.InputDType("X"));
  if (ctx.InputCount("X") > 0 && ctx.IsUnknown(ctx.InputDims("X", 0)))
    return Status::Ok();
  PAREX_ASSIGN_OR_RETURN(Dims y, StackDims(ctx));
  ctx.SetOutputDims("Y", 0, y);
  return Status::Ok();
}

Status InferStackGrad(ShapeContext& ctx) {
  if (ctx.InputCount("X") < 1) return ctx.Error("X binds no variable");
  if (!ctx.IsUnknown(ctx.InputDims("X", 0))) {
    PAREX_ASSIGN_OR_RETURN(Dims y, StackDims(ctx));
    PAREX_RETURN_IF_ERROR(ctx.CheckGradDims("Y@GRAD", y));
  }
  const int n = std::min(ctx.InputCount("X"), ctx.OutputCount("X@GRAD"));
  for (int i = 0; i < n; ++i) {
    ctx.SetOutputDims("X@GRAD", i, ctx.InputDims("X", i));
    ctx.SetOutputDType("X@GRAD", i, ctx.InputDType("Y@GRAD"));
  }
  return Status::Ok();
}

// ---- gather -----------------------------------------------------------------

// Out's dims, or X's (with an unknown extent at `axis`) while Index's are
// unknown at compile time.
StatusOr<Dims> GatherDims(const ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(RejectTensorInputs(ctx, {"Axis"}));
  const DType index_dtype = ctx.InputDType("Index");
  if (index_dtype != DType::kUndefined && index_dtype != DType::kInt32 &&
      index_dtype != DType::kInt64) {
    return ctx.Error(std::string("Index must be int32 or int64, got ") +
                     DTypeName(index_dtype));
  }
  Dims out = ctx.InputDims("X");
  const Dims index = ctx.InputDims("Index");
  const int rank = Rank(out);
  const int axis = ctx.Attr<int>("axis");
  if (ctx.IsUnknown(out)) return out;
  if (axis < -rank || axis >= rank) {
    return ctx.Error("axis " + std::to_string(axis) +
                     " is out of range for X " + DimsToString(out));
  }
  const int a = axis < 0 ? axis + rank : axis;
  if (ctx.IsUnknown(index)) {
    out[a] = -1;
    return out;
  }
  if (index.size() == 2 ? !ExtentsAgree(index[1], 1) : index.size() != 1) {
    return ctx.Error("Index " + DimsToString(index) + " must be 1-D or [N, 1]");
  }
  out[a] = index[0];
  return out;
}

Status InferGather(ShapeContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(Dims out, GatherDims(ctx));
  ctx.SetOutput("Out", out, ctx.InputDType("X"));
  return Status::Ok();
}

Status InferGatherGrad(ShapeContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(Dims out, GatherDims(ctx));
  if (!ctx.IsUnknown(out))
    PAREX_RETURN_IF_ERROR(ctx.CheckGradDims("Out@GRAD", out));
  ctx.SetOutput("X@GRAD", ctx.InputDims("X"), ctx.InputDType("Out@GRAD"));
  return Status::Ok();
}

// ---- expand_v2 --------------------------------------------------------------

// Paddle's limit on the rank of expand_v2's output.
constexpr int kMaxExpandRank = 8;

// expand_v2's shape as a tensor, Paddle's priority order: Shape (one
// tensor), expand_shapes_tensor (one single-value tensor per entry), the
// attribute.
constexpr std::initializer_list<ValueInput> kExpandShape = {
    {"Shape", false}, {"expand_shapes_tensor", true}};

// Out's dims; {} (unknown) at compile time when tensors give the shape.
StatusOr<Dims> ExpandDims(const ShapeContext& ctx) {
  if (!ctx.IsRuntime() && BindsAny(ctx, kExpandShape)) return Dims{};
  const Dims x = ctx.InputDims("X");
  PAREX_ASSIGN_OR_RETURN(
      const std::vector<int64_t> shape,
      IntsFromInputsOrAttr(ctx, kExpandShape,
                           ctx.Attr<std::vector<int64_t>>("shape")));
  const std::string text = DimsToString(shape);
  if (Rank(shape) > kMaxExpandRank) {
    return ctx.Error("shape " + text + " has more than " +
                     std::to_string(kMaxExpandRank) + " entries");
  }
  if (ctx.IsUnknown(x)) {
    Dims out;
    for (int64_t s : shape) out.push_back(s > 0 ? s : -1);
    return out;
  }
  if (shape.size() < x.size()) {
    return ctx.Error("shape " + text + " has fewer entries than X " +
                     DimsToString(x) + " has dims");
  }
  const int lead = Rank(shape) - Rank(x);
  Dims out(shape.size());
  for (int i = 0; i < Rank(shape); ++i) {
    const int64_t s = shape[i];
    const std::string at = "entry " + std::to_string(i) + " of shape " + text;
    if (s == -1 && i >= lead) {
      out[i] = x[i - lead];
      continue;
    }
    if (s <= 0) {
      return ctx.Error(at + " is " + std::to_string(s) +
                       (i < lead ? "; a new dim needs a positive extent"
                                 : "; an extent is positive or -1 (keep X's)"));
    }
    if (i >= lead) {
      const int64_t e = x[i - lead];
      if (e >= 0 && e != 1 && e != s) {
        return ctx.Error(at + " is " + std::to_string(s) + " but X " +
                         DimsToString(x) + " has extent " + std::to_string(e) +
                         " there (only an extent of 1 expands)");
      }
    }
    out[i] = s;
  }
  return out;
}

Status InferExpand(ShapeContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(Dims out, ExpandDims(ctx));
  ctx.SetOutput("Out", out, ctx.InputDType("X"));
  return Status::Ok();
}

Status InferExpandGrad(ShapeContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(Dims out, ExpandDims(ctx));
  if (!ctx.IsUnknown(ctx.InputDims("X")) && !ctx.IsUnknown(out)) {
    PAREX_RETURN_IF_ERROR(ctx.CheckGradDims("Out@GRAD", out));
  }
  ctx.SetOutput("X@GRAD", ctx.InputDims("X"), ctx.InputDType("Out@GRAD"));
  return Status::Ok();
}

// ---- where ------------------------------------------------------------------

Status CheckWhereInputs(const ShapeContext& ctx) {
  const Dims cond = ctx.InputDims("Condition");
  const Dims x = ctx.InputDims("X");
  const Dims y = ctx.InputDims("Y");
  if (!ctx.IsUnknown(cond) && !ctx.IsUnknown(x) && !SameDims(ctx, cond, x)) {
    return ctx.Error("Condition " + DimsToString(cond) + " and X " +
                     DimsToString(x) +
                     " differ; where takes inputs of equal dims");
  }
  if (!ctx.IsUnknown(x) && !ctx.IsUnknown(y) && !SameDims(ctx, x, y)) {
    return ctx.Error("X " + DimsToString(x) + " and Y " + DimsToString(y) +
                     " differ; where takes inputs of equal dims");
  }
  const DType c = ctx.InputDType("Condition");
  if (c != DType::kUndefined && c != DType::kBool) {
    return ctx.Error(std::string("Condition must be bool, got ") +
                     DTypeName(c));
  }
  const DType dx = ctx.InputDType("X"), dy = ctx.InputDType("Y");
  if (dx != DType::kUndefined && dy != DType::kUndefined && dx != dy) {
    return ctx.Error(std::string("X is ") + DTypeName(dx) + " but Y is " +
                     DTypeName(dy));
  }
  return Status::Ok();
}

Status InferWhere(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckWhereInputs(ctx));
  ctx.ShareDimsAndDType("X", "Out");
  return Status::Ok();
}

Status InferWhereGrad(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckWhereInputs(ctx));
  const Dims x = ctx.InputDims("X");
  if (!ctx.IsUnknown(x))
    PAREX_RETURN_IF_ERROR(ctx.CheckGradDims("Out@GRAD", x));
  ctx.SetOutput("X@GRAD", x, ctx.InputDType("Out@GRAD"));
  ctx.SetOutput("Y@GRAD", ctx.InputDims("Y"), ctx.InputDType("Out@GRAD"));
  return Status::Ok();
}

}  // namespace

void RegisterTensorOps(OpSchemaRegistry* r) {
  r->Add(OpSchema("stack")
             .Input("X", kDuplicable)
             .Output("Y")
             .Attr("axis", 0)
             .InferShape(InferStack)
             .Grad("stack_grad", {"X", "Y@GRAD"}, {"X@GRAD"}));
  r->Add(OpSchema("stack_grad")
             .Input("X", kDuplicable)
             .Input("Y@GRAD")
             .Output("X@GRAD", kDuplicable | kOptional)
             .Attr("axis", 0)
             .InferShape(InferStackGrad)
             .KernelDTypeFromInput("Y@GRAD"));

  r->Add(
      OpSchema("gather")
          .Input("X")
          .Input("Index")
          .Input("Axis", kOptional)
          .Output("Out")
          .Attr("axis", 0)
          .InferShape(InferGather)
          .Grad("gather_grad", {"X", "Index", "Axis", "Out@GRAD"}, {"X@GRAD"}));
  r->Add(OpSchema("gather_grad")
             .Input("X")
             .Input("Index")
             .Input("Axis", kOptional)
             .Input("Out@GRAD")
             .Output("X@GRAD")
             .Attr("axis", 0)
             .InferShape(InferGatherGrad)
             .KernelDTypeFromInput("Out@GRAD"));

  for (bool grad : {false, true}) {
    OpSchema s(grad ? "expand_v2_grad" : "expand_v2");
    s.Input("X")
        .Input("Shape", kOptional)
        .Input("expand_shapes_tensor", kOptional | kDuplicable);
    if (grad) {
      s.Input("Out@GRAD").Output("X@GRAD").InferShape(InferExpandGrad);
      s.KernelDTypeFromInput("Out@GRAD");
    } else {
      s.Output("Out")
          .InferShape(InferExpand)
          .Grad("expand_v2_grad",
                {"X", "Shape", "expand_shapes_tensor", "Out@GRAD"}, {"X@GRAD"});
    }
    s.Attr("shape", std::vector<int>{})
        .ShapeFromValues({"Shape", "expand_shapes_tensor"});
    r->Add(std::move(s));
  }

  r->Add(OpSchema("where")
             .Input("Condition")
             .Input("X")
             .Input("Y")
             .Output("Out")
             .InferShape(InferWhere)
             .KernelDTypeFromInput("X")
             .Grad("where_grad", {"Condition", "X", "Y", "Out@GRAD"},
                   {"X@GRAD", "Y@GRAD"}));
  r->Add(OpSchema("where_grad")
             .Input("Condition")
             .Input("X")
             .Input("Y")
             .Input("Out@GRAD")
             .Output("X@GRAD", kOptional)
             .Output("Y@GRAD", kOptional)
             .InferShape(InferWhereGrad)
             .KernelDTypeFromInput("Out@GRAD"));
}

}  // namespace parex
