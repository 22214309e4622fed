// lookup_table and lookup_table_v2 (embedding), with their gradient ops
// (Fluid's slots and attributes).
//
// W is the table [V, D]; Ids holds int64 (v2 also int32) row indices.
//   lookup_table:    Ids [..., 1] -> Out = Ids.dims[:-1] + [D];
//   lookup_table_v2: Ids [...]    -> Out = Ids.dims + [D].
// Out's row for an id equal to padding_idx is zeros (padding_idx -1: none),
// and that row gets no gradient. An id outside [0, V) is an error naming
// the op and the id. The gradient W@GRAD is dense, or with is_sparse
// SelectedRows: a row per id (padding_idx's zero), which the optimizers
// apply row by row (sgd, adam's lazy_mode) or as their dense sum.
#include <string>

#include "graph/ir/ops/op_groups.h"

namespace parex {
namespace {

StatusOr<Dims> LookupOutDims(const ShapeContext& ctx, bool v2) {
  const Dims w = ctx.InputDims("W");
  const Dims ids = ctx.InputDims("Ids");
  if (w.size() != 2) {
    return ctx.Error("W " + DimsToString(w) + " must be a [V, D] table");
  }
  if (ctx.IsRuntime()) {
    const DType t = ctx.InputDType("Ids");
    if (t != DType::kInt64 && !(v2 && t == DType::kInt32)) {
      return ctx.Error(std::string("Ids must be int64") +
                       (v2 ? " or int32" : "") + ", got " + DTypeName(t));
    }
  }
  Dims out = ids;
  if (!v2) {
    if (ids.empty() || !ExtentsAgree(ids.back(), 1)) {
      return ctx.Error("the last dim of Ids " + DimsToString(ids) +
                       " must be 1");
    }
    out.pop_back();
  }
  out.push_back(w[1]);
  return out;
}

InferShapeFn InferLookup(bool v2) {
  return [v2](ShapeContext& ctx) -> Status {
    ctx.SetOutputDType("Out", 0, ctx.InputDType("W"));
    if (ctx.IsUnknown(ctx.InputDims("W")) ||
        ctx.IsUnknown(ctx.InputDims("Ids"))) {
      return Status::Ok();
    }
    PAREX_ASSIGN_OR_RETURN(Dims out, LookupOutDims(ctx, v2));
    ctx.SetOutputDims("Out", 0, out);
    return Status::Ok();
  };
}

InferShapeFn InferLookupGrad(bool v2) {
  return [v2](ShapeContext& ctx) -> Status {
    PAREX_RETURN_IF_ERROR(ctx.CheckSameDType({"W", "Out@GRAD"}));
    if (!ctx.IsUnknown(ctx.InputDims("W")) &&
        !ctx.IsUnknown(ctx.InputDims("Ids"))) {
      PAREX_ASSIGN_OR_RETURN(Dims want, LookupOutDims(ctx, v2));
      const Dims got = ctx.InputDims("Out@GRAD");
      bool ok = got.size() == want.size();
      for (size_t i = 0; ok && i < got.size(); ++i) {
        ok =
            ctx.IsRuntime() ? got[i] == want[i] : ExtentsAgree(got[i], want[i]);
      }
      if (!ok && !ctx.IsUnknown(got)) {
        return ctx.Error("Out@GRAD has dims " + DimsToString(got) +
                         ", expected " + DimsToString(want));
      }
    }
    if (ctx.IsRuntime() && ctx.Attr<bool>("is_sparse")) {
      // SelectedRows: the kernel sizes W@GRAD's rows itself.
      ctx.SetOutputDType("W@GRAD", 0, ctx.InputDType("W"));
      return Status::Ok();
    }
    return InferGradShapesFromForwardInputs(ctx);
  };
}

OpSchema LookupSchema(const std::string& type) {
  OpSchema s(type);
  s.Attr("padding_idx", int64_t{-1})
      .Attr("is_sparse", false)
      .Attr("is_distributed", false)
      .Attr("remote_prefetch", false)
      .KernelDTypeFromInput("W");
  return s;
}

}  // namespace

void RegisterLookupTableOps(OpSchemaRegistry* r) {
  for (bool v2 : {false, true}) {
    const std::string type = v2 ? "lookup_table_v2" : "lookup_table";
    OpSchema forward = LookupSchema(type);
    forward.Input("W")
        .Input("Ids")
        .Output("Out")
        .InferShape(InferLookup(v2))
        .Grad(type + "_grad", {"W", "Ids", "Out@GRAD"}, {"W@GRAD"});
    r->Add(std::move(forward));

    OpSchema grad = LookupSchema(type + "_grad");
    grad.Input("W")
        .Input("Ids")
        .Input("Out@GRAD")
        .Output("W@GRAD", kOptional)
        .InferShape(InferLookupGrad(v2));
    r->Add(std::move(grad));
  }
}

}  // namespace parex
