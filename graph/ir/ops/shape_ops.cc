// reshape2, transpose2, concat and split, with their gradient ops (Fluid's
// slots and attributes).
//
// reshape2: `shape` entries are extents, 0 (copy X's extent at that index)
//   or one -1 (inferred from X's element count).
// reshape2 / transpose2 also write XShape = [0] + X.dims: it carries X's dims
//   to the gradient op and holds no elements.
// concat: inputs agree on every dim but `axis` (negative counts from the
//   end); Out's extent there is their sum.
// split: `num` equal parts, or `sections` (one may be -1) along `axis`. Its
//   gradient is a concat of the Out gradients (Fluid's split grad maker), so
//   split declares no gradient op of its own.
// Tensor-valued overrides of attributes (Shape, ShapeTensor, AxisTensor,
// SectionsTensorList) are declared so Paddle files validate, but reading
// them is unimplemented.
#include <string>
#include <vector>

#include "graph/ir/ops/op_groups.h"
#include "graph/ir/spec/slice_spec.h"
#include "graph/ir/spec/value_inputs.h"

namespace parex {
namespace {

int Rank(const Dims& d) { return static_cast<int>(d.size()); }

Status RejectTensorAttrs(const ShapeContext& ctx,
                         std::initializer_list<const char*> slots) {
  for (const char* slot : slots) {
    if (ctx.HasInput(slot)) {
      return Unimplemented(ctx.op().Label() + ": input '" + slot +
                           "' (a tensor-valued attribute) is not supported");
    }
  }
  return Status::Ok();
}

// `axis` normalised into [0, rank).
StatusOr<int> NormalizeAxis(const ShapeContext& ctx, int axis, int rank) {
  const int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    return ctx.Error("axis " + std::to_string(axis) + " is out of range for " +
                     "rank " + std::to_string(rank));
  }
  return a;
}

Dims XShapeOf(const Dims& x) {
  Dims d{0};
  d.insert(d.end(), x.begin(), x.end());
  return d;
}

// X's dims from XShape, for the gradient ops.
StatusOr<Dims> DimsFromXShape(const ShapeContext& ctx) {
  const Dims xshape = ctx.InputDims("XShape");
  if (xshape.empty() || xshape[0] != 0) {
    return ctx.Error("XShape " + DimsToString(xshape) +
                     " is not [0, X's dims...]");
  }
  return Dims(xshape.begin() + 1, xshape.end());
}

// ---- reshape2 ---------------------------------------------------------------

// reshape2's shape as a tensor, Paddle's priority order: ShapeTensor (one
// single-value tensor per extent), Shape (one tensor), the attribute.
constexpr std::initializer_list<ValueInput> kReshapeShape = {
    {"ShapeTensor", true}, {"Shape", false}};

StatusOr<Dims> ReshapeOutDims(const ShapeContext& ctx, const Dims& x,
                              const std::vector<int64_t>& shape) {
  const std::string shape_text = DimsToString(Dims(shape.begin(), shape.end()));
  if (shape.size() > kMaxRank) {
    return ctx.Error("shape " + shape_text + " has more than " +
                     std::to_string(kMaxRank) + " dims");
  }
  Dims out(shape.size());
  int infer = -1;
  int64_t known = 1;  // product of the other extents; -1 when one is unknown
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) {
        return ctx.Error("shape " + shape_text + " has more than one -1");
      }
      infer = i;
      continue;
    }
    if (shape[i] < -1) {
      return ctx.Error("shape " + shape_text + " has a negative extent");
    }
    if (shape[i] == 0 && i >= Rank(x)) {
      return ctx.Error("shape " + shape_text + " copies dim " +
                       std::to_string(i) + " (0) of X " + DimsToString(x) +
                       ", which has no such dim");
    }
    out[i] = shape[i] == 0 ? x[i] : shape[i];
    if (known >= 0 && out[i] >= 0 &&
        (!CheckedMul(known, out[i], &known) || known > kMaxNumel)) {
      return ctx.Error("shape " + shape_text +
                       " holds more than 2^48 elements");
    }
    if (out[i] < 0) known = -1;
  }
  const int64_t numel = Numel(x);
  if (infer >= 0) {
    out[infer] = -1;
    if (numel >= 0 && known >= 0) {
      if (known == 0 || numel % known != 0) {
        return ctx.Error("cannot infer the -1 of shape " + shape_text +
                         " for X " + DimsToString(x));
      }
      out[infer] = numel / known;
    }
  } else if (numel >= 0 && known >= 0 && numel != known) {
    return ctx.Error("shape " + shape_text + " holds " + std::to_string(known) +
                     " elements, X " + DimsToString(x) + " holds " +
                     std::to_string(numel));
  }
  return out;
}

Status InferReshape2(ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  ctx.SetOutputDType("Out", 0, ctx.InputDType("X"));
  ctx.SetOutputDType("XShape", 0, ctx.InputDType("X"));
  if (ctx.IsUnknown(x)) return Status::Ok();
  ctx.SetOutputDims("XShape", 0, XShapeOf(x));
  // A shape from tensors is known at run time only.
  if (!ctx.IsRuntime() && BindsAny(ctx, kReshapeShape)) return Status::Ok();
  PAREX_ASSIGN_OR_RETURN(
      std::vector<int64_t> shape,
      IntsFromInputsOrAttr(ctx, kReshapeShape,
                           ctx.Attr<std::vector<int64_t>>("shape")));
  PAREX_ASSIGN_OR_RETURN(Dims out, ReshapeOutDims(ctx, x, shape));
  ctx.SetOutputDims("Out", 0, out);
  return Status::Ok();
}

Status InferReshape2Grad(ShapeContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(Dims x, DimsFromXShape(ctx));
  const Dims dout = ctx.InputDims("Out@GRAD");
  const int64_t a = Numel(x), b = Numel(dout);
  if (!ctx.IsUnknown(dout) && a >= 0 && b >= 0 && a != b) {
    return ctx.Error("Out@GRAD " + DimsToString(dout) + " does not hold the " +
                     std::to_string(a) + " elements of X " + DimsToString(x));
  }
  ctx.SetOutput("X@GRAD", x, ctx.InputDType("Out@GRAD"));
  return Status::Ok();
}

// ---- unsqueeze2, squeeze2, flatten_contiguous_range -------------------------
// Views with new dims, like reshape2 (same kernels, same XShape and
// gradient); Paddle 2.6's rules for the dims.

// unsqueeze2: a 1 inserted at each of `axes` in turn, a negative axis
// counting from the end of the dims so far (+1).
StatusOr<Dims> UnsqueezeDims(const ShapeContext& ctx, const Dims& x) {
  const std::vector<int> axes = ctx.Attr<std::vector<int>>("axes");
  if (x.size() + axes.size() > kMaxRank) {
    return ctx.Error("unsqueezing X " + DimsToString(x) + " at " +
                     std::to_string(axes.size()) + " axes exceeds rank " +
                     std::to_string(kMaxRank));
  }
  Dims out = x;
  for (int axis : axes) {
    const int rank = Rank(out);
    const int at = axis < 0 ? axis + rank + 1 : axis;
    if (at < 0 || at > rank) {
      return ctx.Error("axes entry " + std::to_string(axis) +
                       " is out of range for " + DimsToString(out));
    }
    out.insert(out.begin() + at, 1);
  }
  return out;
}

// squeeze2: the dims of extent 1 at `axes` removed (all of them when axes is
// empty); an axis whose extent is not 1 stays, as in Paddle 2.x.
StatusOr<Dims> SqueezeDims(const ShapeContext& ctx, const Dims& x) {
  const std::vector<int> axes = ctx.Attr<std::vector<int>>("axes");
  std::vector<bool> drop(x.size(), false);
  if (axes.empty()) {
    for (size_t i = 0; i < x.size(); ++i) drop[i] = x[i] == 1;
  }
  for (int axis : axes) {
    PAREX_ASSIGN_OR_RETURN(int a, NormalizeAxis(ctx, axis, Rank(x)));
    drop[a] = x[a] == 1;
  }
  Dims out;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!drop[i]) out.push_back(x[i]);
  }
  return out;
}

// flatten_contiguous_range: dims start_axis..stop_axis become one.
StatusOr<Dims> FlattenDims(const ShapeContext& ctx, const Dims& x) {
  if (x.empty()) return Dims{1};  // a scalar flattens to one element
  PAREX_ASSIGN_OR_RETURN(
      int start, NormalizeAxis(ctx, ctx.Attr<int>("start_axis"), Rank(x)));
  PAREX_ASSIGN_OR_RETURN(
      int stop, NormalizeAxis(ctx, ctx.Attr<int>("stop_axis"), Rank(x)));
  if (start > stop) {
    return ctx.Error("start_axis " + std::to_string(start) +
                     " is after stop_axis " + std::to_string(stop));
  }
  Dims out(x.begin(), x.begin() + start);
  int64_t merged = 1;
  for (int i = start; i <= stop; ++i)
    merged = x[i] < 0 || merged < 0 ? -1 : merged * x[i];
  out.push_back(merged);
  out.insert(out.end(), x.begin() + stop + 1, x.end());
  return out;
}

InferShapeFn InferView(StatusOr<Dims> (*dims)(const ShapeContext&, const Dims&),
                       std::vector<const char*> rejected) {
  return [dims, rejected](ShapeContext& ctx) -> Status {
    for (const char* slot : rejected) {
      PAREX_RETURN_IF_ERROR(RejectTensorAttrs(ctx, {slot}));
    }
    const Dims x = ctx.InputDims("X");
    ctx.SetOutputDType("Out", 0, ctx.InputDType("X"));
    ctx.SetOutputDType("XShape", 0, ctx.InputDType("X"));
    if (ctx.IsUnknown(x) && !ctx.IsRuntime()) return Status::Ok();
    PAREX_ASSIGN_OR_RETURN(Dims out, dims(ctx, x));
    ctx.SetOutputDims("Out", 0, out);
    ctx.SetOutputDims("XShape", 0, XShapeOf(x));
    return Status::Ok();
  };
}

// ---- slice ------------------------------------------------------------------
// Paddle's slice: along each of `axes`, elements [start, end) with negative
// bounds counted from the end and both clamped to [0, extent] (an end before
// its start gives none); `decrease_axis` then drops axes left with extent 1.

// Bounds given as tensors are known at run time only.
bool SliceBoundsLater(const ShapeContext& ctx) {
  return !ctx.IsRuntime() &&
         (BindsAny(ctx, kSliceStarts) || BindsAny(ctx, kSliceEnds));
}

Status InferSlice(ShapeContext& ctx) {
  const Dims in = ctx.InputDims("Input");
  ctx.SetOutputDType("Out", 0, ctx.InputDType("Input"));
  if (ctx.IsUnknown(in) || SliceBoundsLater(ctx)) return Status::Ok();
  PAREX_ASSIGN_OR_RETURN(SliceSpec spec, SliceSpecOf(ctx, in));
  ctx.SetOutputDims("Out", 0, spec.decreased);
  return Status::Ok();
}

Status InferSliceGrad(ShapeContext& ctx) {
  const Dims in = ctx.InputDims("Input");
  if (!ctx.IsUnknown(in) && !SliceBoundsLater(ctx)) {
    PAREX_ASSIGN_OR_RETURN(SliceSpec spec, SliceSpecOf(ctx, in));
    const Dims dout = ctx.InputDims("Out@GRAD");
    if (ctx.IsRuntime() && Numel(dout) != Numel(spec.out)) {
      return ctx.Error("Out@GRAD " + DimsToString(dout) +
                       " does not hold the slice's " +
                       std::to_string(Numel(spec.out)) + " elements");
    }
  }
  ctx.SetOutput("Input@GRAD", in, ctx.InputDType("Out@GRAD"));
  return Status::Ok();
}

// ---- transpose2 -------------------------------------------------------------

StatusOr<Dims> TransposeOutDims(const ShapeContext& ctx, const Dims& x) {
  const std::vector<int> axis = ctx.Attr<std::vector<int>>("axis");
  std::vector<bool> seen(x.size(), false);
  bool ok = axis.size() == x.size();
  for (size_t i = 0; ok && i < axis.size(); ++i) {
    ok = axis[i] >= 0 && axis[i] < Rank(x) && !seen[axis[i]];
    if (ok) seen[axis[i]] = true;
  }
  if (!ok) {
    return ctx.Error("axis " + DimsToString(Dims(axis.begin(), axis.end())) +
                     " is not a permutation of the dims of X " +
                     DimsToString(x));
  }
  Dims out(x.size());
  for (size_t i = 0; i < axis.size(); ++i) out[i] = x[axis[i]];
  return out;
}

Status InferTranspose2(ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  ctx.SetOutputDType("Out", 0, ctx.InputDType("X"));
  ctx.SetOutputDType("XShape", 0, ctx.InputDType("X"));
  if (ctx.IsUnknown(x)) return Status::Ok();
  PAREX_ASSIGN_OR_RETURN(Dims out, TransposeOutDims(ctx, x));
  ctx.SetOutputDims("Out", 0, out);
  ctx.SetOutputDims("XShape", 0, XShapeOf(x));
  return Status::Ok();
}

Status InferTranspose2Grad(ShapeContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(Dims x, DimsFromXShape(ctx));
  PAREX_ASSIGN_OR_RETURN(Dims out, TransposeOutDims(ctx, x));
  PAREX_RETURN_IF_ERROR(ctx.CheckGradDims("Out@GRAD", out));
  ctx.SetOutput("X@GRAD", x, ctx.InputDType("Out@GRAD"));
  return Status::Ok();
}

// ---- concat -----------------------------------------------------------------

StatusOr<Dims> ConcatOutDims(const ShapeContext& ctx) {
  const int n = ctx.InputCount("X");
  const Dims first = ctx.InputDims("X", 0);
  PAREX_ASSIGN_OR_RETURN(
      int axis, NormalizeAxis(ctx, ctx.Attr<int>("axis"), Rank(first)));
  Dims out = first;
  for (int i = 1; i < n; ++i) {
    const Dims d = ctx.InputDims("X", i);
    bool ok = d.size() == first.size();
    for (int k = 0; ok && k < Rank(d); ++k) {
      if (k == axis) continue;
      ok = ctx.IsRuntime() ? d[k] == out[k] : ExtentsAgree(d[k], out[k]);
      if (out[k] < 0) out[k] = d[k];
    }
    if (!ok) {
      return ctx.Error("X[" + std::to_string(i) + "] " + DimsToString(d) +
                       " does not match X[0] " + DimsToString(first) +
                       " outside axis " + std::to_string(axis));
    }
    if (ctx.IsRuntime() && ctx.InputDType("X", i) != ctx.InputDType("X", 0)) {
      return ctx.Error(std::string("X[") + std::to_string(i) + "] is " +
                       DTypeName(ctx.InputDType("X", i)) + ", X[0] is " +
                       DTypeName(ctx.InputDType("X", 0)));
    }
    out[axis] = out[axis] < 0 || d[axis] < 0 ? -1 : out[axis] + d[axis];
  }
  return out;
}

bool AnyUnknownInput(const ShapeContext& ctx, const char* slot) {
  for (int i = 0; i < ctx.InputCount(slot); ++i) {
    if (ctx.IsUnknown(ctx.InputDims(slot, i))) return true;
  }
  return false;
}

Status InferConcat(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(RejectTensorAttrs(ctx, {"AxisTensor"}));
  ctx.SetOutputDType("Out", 0, ctx.InputDType("X"));
  if (AnyUnknownInput(ctx, "X")) return Status::Ok();
  PAREX_ASSIGN_OR_RETURN(Dims out, ConcatOutDims(ctx));
  ctx.SetOutputDims("Out", 0, out);
  return Status::Ok();
}

Status InferConcatGrad(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(RejectTensorAttrs(ctx, {"AxisTensor"}));
  if (!AnyUnknownInput(ctx, "X")) {
    PAREX_ASSIGN_OR_RETURN(Dims out, ConcatOutDims(ctx));
    PAREX_RETURN_IF_ERROR(ctx.CheckGradDims("Out@GRAD", out));
  }
  return InferGradShapesFromForwardInputs(ctx);
}

// ---- split ------------------------------------------------------------------

Status InferSplit(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(
      RejectTensorAttrs(ctx, {"AxisTensor", "SectionsTensorList"}));
  const Dims x = ctx.InputDims("X");
  const int outs = ctx.OutputCount("Out");
  for (int i = 0; i < outs; ++i) {
    ctx.SetOutputDType("Out", i, ctx.InputDType("X"));
  }
  if (ctx.IsUnknown(x)) return Status::Ok();
  PAREX_ASSIGN_OR_RETURN(int axis,
                         NormalizeAxis(ctx, ctx.Attr<int>("axis"), Rank(x)));
  const int num = ctx.Attr<int>("num");
  std::vector<int64_t> sections = ctx.Attr<std::vector<int64_t>>("sections");
  const int64_t extent = x[axis];
  if (num > 0) {
    if (extent >= 0 && extent % num != 0) {
      return ctx.Error("dim " + std::to_string(axis) + " of X " +
                       DimsToString(x) + " does not split into " +
                       std::to_string(num) + " equal parts");
    }
    sections.assign(num, extent < 0 ? -1 : extent / num);
  } else {
    if (sections.empty()) return ctx.Error("neither num nor sections is set");
    int infer = -1;
    int64_t known = 0;
    for (int i = 0; i < static_cast<int>(sections.size()); ++i) {
      if (sections[i] == -1 && infer < 0) {
        infer = i;
      } else if (sections[i] < 0) {
        return ctx.Error(
            "sections may hold one -1 and no other negative "
            "value");
      } else {
        known += sections[i];
      }
    }
    if (extent >= 0 && (infer < 0 ? known != extent : known > extent)) {
      return ctx.Error("sections sum to " + std::to_string(known) + ", dim " +
                       std::to_string(axis) + " of X " + DimsToString(x) +
                       " is " + std::to_string(extent));
    }
    if (infer >= 0) sections[infer] = extent < 0 ? -1 : extent - known;
  }
  if (static_cast<int>(sections.size()) != outs) {
    return ctx.Error("splits into " + std::to_string(sections.size()) +
                     " parts but has " + std::to_string(outs) + " outputs");
  }
  for (int i = 0; i < outs; ++i) {
    Dims d = x;
    d[axis] = sections[i];
    ctx.SetOutputDims("Out", i, d);
  }
  return Status::Ok();
}

// shape: Out (int32, [rank of Input]) holds Input's dims; the rank must be
// declared at compile time (a var declared without dims has none).
Status InferShapeOp(ShapeContext& ctx) {
  const Dims in = ctx.InputDims("Input");
  if (ctx.IsUnknown(in)) {
    ctx.SetOutput("Out", {-1}, DType::kInt32);
    return Status::Ok();
  }
  ctx.SetOutput("Out", {static_cast<int64_t>(in.size())}, DType::kInt32);
  return Status::Ok();
}

}  // namespace

void RegisterShapeOps(OpSchemaRegistry* r) {
  // size: the element count of Input (Paddle's 0-D int64; parex's [1]).
  r->Add(OpSchema("size")
             .Input("Input")
             .Output("Out")
             .InferShape([](ShapeContext& ctx) {
               ctx.SetOutput("Out", {1}, DType::kInt64);
               return Status::Ok();
             })
             .KernelDTypeAny());
  r->Add(OpSchema("shape")
             .Input("Input")
             .Output("Out")
             .InferShape(InferShapeOp)
             .KernelDTypeAny());
  r->Add(OpSchema("reshape2")
             .Input("X")
             .Input("Shape", kOptional)
             .Input("ShapeTensor", kOptional | kDuplicable)
             .Output("Out")
             .Output("XShape", kOptional)
             .Inplace("X", "Out")
             .Attr("shape", std::vector<int>{})
             .ShapeFromValues({"Shape", "ShapeTensor"})
             .InferShape(InferReshape2)
             .Grad("reshape2_grad", {"XShape", "Out@GRAD"}, {"X@GRAD"}));
  r->Add(OpSchema("reshape2_grad")
             .Input("XShape")
             .Input("Out@GRAD")
             .Output("X@GRAD")
             .Attr("shape", std::vector<int>{})
             .InferShape(InferReshape2Grad)
             .KernelDTypeFromInput("Out@GRAD"));

  // The views: reshape2's XShape and gradient, their own dims.
  struct View {
    const char* type;
    StatusOr<Dims> (*dims)(const ShapeContext&, const Dims&);
    std::vector<const char*> tensor_attrs;
  };
  for (const View& v :
       {View{"unsqueeze2", UnsqueezeDims, {"AxesTensor", "AxesTensorList"}},
        View{"squeeze2", SqueezeDims, {}},
        View{"flatten_contiguous_range", FlattenDims, {}}}) {
    OpSchema op(v.type);
    op.Input("X");
    for (const char* t : v.tensor_attrs) op.Input(t, kOptional | kDuplicable);
    op.Output("Out")
        .Output("XShape", kOptional)
        .Inplace("X", "Out")
        .InferShape(InferView(v.dims, v.tensor_attrs))
        .Grad(std::string(v.type) + "_grad", {"XShape", "Out@GRAD"},
              {"X@GRAD"});
    OpSchema grad(std::string(v.type) + "_grad");
    grad.Input("XShape")
        .Input("Out@GRAD")
        .Output("X@GRAD")
        .InferShape(InferReshape2Grad)
        .KernelDTypeFromInput("Out@GRAD");
    for (OpSchema* s : {&op, &grad}) {
      if (std::string(v.type) == "flatten_contiguous_range") {
        s->Attr("start_axis", 1).Attr("stop_axis", 1);
      } else {
        s->Attr("axes", std::vector<int>{});
      }
    }
    r->Add(std::move(op));
    r->Add(std::move(grad));
  }

  for (bool grad : {false, true}) {
    OpSchema s(grad ? "slice_grad" : "slice");
    s.Input("Input")
        .Input("StartsTensor", kOptional)
        .Input("EndsTensor", kOptional)
        .Input("StartsTensorList", kOptional | kDuplicable)
        .Input("EndsTensorList", kOptional | kDuplicable);
    if (grad) {
      s.Input("Out@GRAD").Output("Input@GRAD").InferShape(InferSliceGrad);
      s.KernelDTypeFromInput("Out@GRAD");
    } else {
      s.Output("Out")
          .InferShape(InferSlice)
          .Grad("slice_grad",
                {"Input", "StartsTensor", "EndsTensor", "StartsTensorList",
                 "EndsTensorList", "Out@GRAD"},
                {"Input@GRAD"});
    }
    s.ShapeFromValues(
        {"StartsTensor", "EndsTensor", "StartsTensorList", "EndsTensorList"});
    s.RequiredAttr("axes", proto::INTS)
        .Attr("starts",
              std::vector<int>{})  // INTS in Paddle's programs; read as int64
        .Attr("ends", std::vector<int>{})
        .Attr("decrease_axis", std::vector<int>{})
        .Attr("infer_flags", std::vector<int>{});
    r->Add(std::move(s));
  }

  r->Add(OpSchema("transpose2")
             .Input("X")
             .Output("Out")
             .Output("XShape", kOptional)
             .RequiredAttr("axis", proto::INTS)
             .InferShape(InferTranspose2)
             .Grad("transpose2_grad", {"XShape", "Out@GRAD"}, {"X@GRAD"}));
  r->Add(OpSchema("transpose2_grad")
             .Input("XShape")
             .Input("Out@GRAD")
             .Output("X@GRAD")
             .RequiredAttr("axis", proto::INTS)
             .InferShape(InferTranspose2Grad)
             .KernelDTypeFromInput("Out@GRAD"));

  r->Add(OpSchema("concat")
             .Input("X", kDuplicable)
             .Input("AxisTensor", kOptional)
             .Output("Out")
             .Attr("axis", 0)
             .InferShape(InferConcat)
             .Grad("concat_grad", {"X", "Out@GRAD"}, {"X@GRAD"}));
  r->Add(OpSchema("concat_grad")
             .Input("X", kDuplicable)
             .Input("AxisTensor", kOptional)
             .Input("Out@GRAD")
             .Output("X@GRAD", kDuplicable | kOptional)
             .Attr("axis", 0)
             .InferShape(InferConcatGrad)
             .KernelDTypeFromInput("Out@GRAD"));

  r->Add(OpSchema("split")
             .Input("X")
             .Input("AxisTensor", kOptional)
             .Input("SectionsTensorList", kOptional | kDuplicable)
             .Output("Out", kDuplicable)
             .Attr("num", 0)
             .Attr("sections", std::vector<int>{})
             .Attr("axis", 0)
             .InferShape(InferSplit));
}

}  // namespace parex
