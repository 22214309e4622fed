// Reductions: mean (of every element, Out [1]), reduce_sum / reduce_mean
// (over the dims `dim`, or all with reduce_all), their Fluid gradient ops,
// and sum (the element-wise sum of several same-shaped inputs that Fluid's
// backward pass uses to accumulate gradients; no gradient op). And the scan
// cumsum: running sums along `axis` (with flatten, over every element and
// Out 1-D), `exclusive` leaving each element out of its own sum, `reverse`
// summing from the end; Paddle 2.6 records its gradient as cumsum_grad
// (X, Out@GRAD), the scan of Out@GRAD the other way round.
//
// Out dims of reduce_* follow Paddle 2.x before 0-D tensors: the reduced dims
// become 1 with keep_dim, else they are removed, and a result with no dims
// left is [1]. An empty `dim` list reduces every dim.
#include <algorithm>
#include <string>
#include <vector>

#include "graph/ir/ops/op_groups.h"

namespace parex {
namespace {

Status InferMean(ShapeContext& ctx) {
  ctx.SetOutput("Out", {1}, ctx.InputDType("X"));
  return Status::Ok();
}

// The dims of X that reduce_* reduces (logsumexp's attribute is "axis"), as
// a mask over X's rank.
StatusOr<std::vector<bool>> ReducedDims(const ShapeContext& ctx, int rank,
                                        const char* dims_attr = "dim") {
  const std::vector<int> dims = ctx.Attr<std::vector<int>>(dims_attr);
  const bool all = ctx.Attr<bool>("reduce_all") || dims.empty();
  std::vector<bool> mask(rank, all);
  for (int d : dims) {
    if (d < -rank || d >= rank) {
      return ctx.Error("dim " + std::to_string(d) +
                       " is out of range for X of rank " +
                       std::to_string(rank));
    }
    mask[d < 0 ? d + rank : d] = true;
  }
  return mask;
}

Status InferReduce(ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  const DType in = ctx.InputDType("X");
  DType out_dtype = in;
  if (ctx.Attr<int>("out_dtype") >= 0) {
    out_dtype = static_cast<DType>(ctx.Attr<int>("out_dtype"));
    if (out_dtype != DType::kFP32 && out_dtype != DType::kFP64 &&
        out_dtype != DType::kInt32 && out_dtype != DType::kInt64) {
      return ctx.Error("out_dtype " +
                       std::to_string(ctx.Attr<int>("out_dtype")) +
                       " is not fp32, fp64, int32 or int64");
    }
  }
  if (!Known(ctx, x)) {
    ctx.SetOutput("Out", {}, out_dtype);
    return Status::Ok();
  }
  PAREX_ASSIGN_OR_RETURN(std::vector<bool> mask,
                         ReducedDims(ctx, static_cast<int>(x.size())));
  const bool keep_dim = ctx.Attr<bool>("keep_dim");
  Dims out;
  for (size_t d = 0; d < x.size(); ++d) {
    if (!mask[d]) {
      out.push_back(x[d]);
    } else if (keep_dim) {
      out.push_back(1);
    }
  }
  if (out.empty()) out.push_back(1);
  ctx.SetOutput("Out", out, out_dtype);
  return Status::Ok();
}

// p_norm: X without `axis` (1 there with keepdim), or one value (asvector).
Status InferPNorm(ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  if (!Known(ctx, x)) {
    ctx.SetOutput("Out", {}, ctx.InputDType("X"));
    return Status::Ok();
  }
  const int rank = static_cast<int>(x.size());
  const bool keep = ctx.Attr<bool>("keepdim");
  if (ctx.Attr<bool>("asvector")) {
    ctx.SetOutput("Out", keep ? Dims(x.size(), 1) : Dims{1},
                  ctx.InputDType("X"));
    return Status::Ok();
  }
  int axis = ctx.Attr<int>("axis");
  if (axis < -rank || axis >= rank) {
    return ctx.Error("axis " + std::to_string(axis) +
                     " is out of range for X of rank " + std::to_string(rank));
  }
  if (axis < 0) axis += rank;
  Dims out;
  for (int d = 0; d < rank; ++d) {
    if (d != axis) {
      out.push_back(x[d]);
    } else if (keep) {
      out.push_back(1);
    }
  }
  if (out.empty()) out.push_back(1);
  ctx.SetOutput("Out", out, ctx.InputDType("X"));
  return Status::Ok();
}

// logsumexp: reduce's shape rule with Paddle 2.x's attribute names.
Status InferLogsumexp(ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  if (!Known(ctx, x)) {
    ctx.SetOutput("Out", {}, ctx.InputDType("X"));
    return Status::Ok();
  }
  PAREX_ASSIGN_OR_RETURN(std::vector<bool> mask,
                         ReducedDims(ctx, static_cast<int>(x.size()), "axis"));
  Dims out;
  for (size_t d = 0; d < x.size(); ++d) {
    if (!mask[d]) {
      out.push_back(x[d]);
    } else if (ctx.Attr<bool>("keepdim")) {
      out.push_back(1);
    }
  }
  if (out.empty()) out.push_back(1);
  ctx.SetOutput("Out", out, ctx.InputDType("X"));
  return Status::Ok();
}

// reduce_*_grad: X@GRAD takes X's dims; Out@GRAD must have Out's element
// count (its dims with or without the kept 1s).
Status InferReduceGrad(ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  const Dims dout = ctx.InputDims("Out@GRAD");
  if (Known(ctx, x) && Known(ctx, dout) && Numel(x) >= 0 && Numel(dout) >= 0) {
    PAREX_ASSIGN_OR_RETURN(std::vector<bool> mask,
                           ReducedDims(ctx, static_cast<int>(x.size())));
    int64_t want = 1;
    for (size_t d = 0; d < x.size(); ++d) want *= mask[d] ? 1 : x[d];
    if (Numel(dout) != want) {
      return ctx.Error("Out@GRAD " + DimsToString(dout) + " has " +
                       std::to_string(Numel(dout)) + " elements, the " +
                       "reduction of X " + DimsToString(x) + " has " +
                       std::to_string(want));
    }
  }
  ctx.SetOutput("X@GRAD", x, ctx.InputDType("X"));
  return Status::Ok();
}

Status InferMeanGrad(ShapeContext& ctx) {
  const Dims dout = ctx.InputDims("Out@GRAD");
  if (Known(ctx, dout) && Numel(dout) != 1 && Numel(dout) >= 0) {
    return ctx.Error("Out@GRAD " + DimsToString(dout) +
                     " must hold one element");
  }
  return InferGradShapesFromForwardInputs(ctx);
}

// Inputs with no elements are skipped (Fluid's sum does so for gradients
// that were never computed); the others must have the same dims and dtype.
Status InferSum(ShapeContext& ctx) {
  Dims out;
  DType dtype = DType::kUndefined;
  bool found = false;
  bool sparse = false;  // a SelectedRows input: the kernel sizes Out itself
  for (int i = 0; i < ctx.InputCount("X"); ++i)
    sparse = sparse || ctx.InputIsSparse("X", i);
  for (int i = 0; i < ctx.InputCount("X"); ++i) {
    const Dims d = ctx.InputDims("X", i);
    const DType t = ctx.InputDType("X", i);
    if (!Known(ctx, d) || Numel(d) == 0) continue;
    if (!found) {
      out = d;
      dtype = t;
      found = true;
      continue;
    }
    bool agree = d.size() == out.size();
    for (size_t k = 0; agree && k < d.size(); ++k) {
      agree = ExtentsAgree(d[k], out[k]);
    }
    if (!agree) {
      return ctx.Error("input X[" + std::to_string(i) + "] " + DimsToString(d) +
                       " does not match X[0] " + DimsToString(out));
    }
    if (t != DType::kUndefined && dtype != DType::kUndefined && t != dtype) {
      return ctx.Error("input X[" + std::to_string(i) + "] is " + DTypeName(t) +
                       ", X[0] is " + DTypeName(dtype));
    }
  }
  if (!found && ctx.InputCount("X") > 0) {
    out = ctx.InputDims("X", 0);
    dtype = ctx.InputDType("X", 0);
  }
  if (sparse) {
    ctx.SetOutputDType("Out", 0, dtype);
    return Status::Ok();
  }
  ctx.SetOutput("Out", out, dtype);
  return Status::Ok();
}

// Out is X's dims, or [numel] with flatten.
Status InferCumsum(ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  const DType dtype = ctx.InputDType("X");
  if (!Known(ctx, x)) {
    ctx.SetOutput("Out", {}, dtype);
    return Status::Ok();
  }
  if (ctx.Attr<bool>("flatten")) {
    ctx.SetOutput("Out", {Numel(x)}, dtype);
    return Status::Ok();
  }
  const int rank = static_cast<int>(x.size());
  const int axis = ctx.Attr<int>("axis");
  if (axis < -rank || axis >= rank) {
    return ctx.Error("axis " + std::to_string(axis) +
                     " is out of range for X " + DimsToString(x) +
                     " (without flatten)");
  }
  ctx.SetOutput("Out", x, dtype);
  return Status::Ok();
}

Status InferCumsumGrad(ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  const Dims dout = ctx.InputDims("Out@GRAD");
  if (Known(ctx, x) && Known(ctx, dout) && Numel(x) >= 0 && Numel(dout) >= 0 &&
      Numel(x) != Numel(dout)) {
    return ctx.Error("Out@GRAD " + DimsToString(dout) + " does not hold X " +
                     DimsToString(x) + "'s elements");
  }
  if (Known(ctx, x) && !ctx.Attr<bool>("flatten")) {
    const int rank = static_cast<int>(x.size());
    const int axis = ctx.Attr<int>("axis");
    if (axis < -rank || axis >= rank) {
      return ctx.Error("axis " + std::to_string(axis) +
                       " is out of range for X " + DimsToString(x) +
                       " (without flatten)");
    }
  }
  ctx.SetOutput("X@GRAD", x, ctx.InputDType("Out@GRAD"));
  return Status::Ok();
}

// `reads_out`: the gradient op reads Out too (max, min, prod). `optional`:
// optional inputs of both ops (reduce_amax's AxisTensor, AxisTensorList,
// which parex does not read: the dim attribute holds the axes).
void AddReduce(OpSchemaRegistry* r, const std::string& type,
               bool reads_out = false,
               const std::vector<std::string>& optional = {}) {
  std::vector<std::string> grad_reads = {"X", "Out@GRAD"};
  if (reads_out) grad_reads.insert(grad_reads.begin() + 1, "Out");
  grad_reads.insert(grad_reads.end(), optional.begin(), optional.end());
  OpSchema forward(type);
  forward.Input("X");
  for (const std::string& in : optional) forward.Input(in, kOptional);
  r->Add(std::move(forward)
             .Output("Out")
             .Attr("dim", std::vector<int>{0})
             .Attr("keep_dim", false)
             .Attr("reduce_all", false)
             .Attr("in_dtype", -1)
             .Attr("out_dtype", -1)
             .InferShape(InferReduce)
             .Grad(type + "_grad", grad_reads, {"X@GRAD"}));
  OpSchema grad(type + "_grad");
  for (const std::string& slot : grad_reads) {
    const bool opt =
        std::find(optional.begin(), optional.end(), slot) != optional.end();
    grad.Input(slot, opt ? kOptional : kRequired);
  }
  grad.Output("X@GRAD")
      .Attr("dim", std::vector<int>{0})
      .Attr("keep_dim", false)
      .Attr("reduce_all", false)
      .Attr("in_dtype", -1)
      .Attr("out_dtype", -1)
      .InferShape(InferReduceGrad);
  r->Add(std::move(grad));
}

}  // namespace

void RegisterReduceOps(OpSchemaRegistry* r) {
  r->Add(OpSchema("mean").Input("X").Output("Out").InferShape(InferMean).Grad(
      "mean_grad", {"X", "Out@GRAD"}, {"X@GRAD"}));
  r->Add(OpSchema("mean_grad")
             .Input("X")
             .Input("Out@GRAD")
             .Output("X@GRAD")
             .InferShape(InferMeanGrad));
  AddReduce(r, "reduce_sum");
  AddReduce(r, "reduce_mean");
  AddReduce(r, "reduce_max", /*reads_out=*/true);
  AddReduce(r, "reduce_min", /*reads_out=*/true);
  AddReduce(r, "reduce_prod", /*reads_out=*/true);
  AddReduce(r, "frobenius_norm", /*reads_out=*/true);
  AddReduce(r, "reduce_amax", /*reads_out=*/true,
            {"AxisTensor", "AxisTensorList"});
  r->Add(OpSchema("p_norm")
             .Input("X")
             .Output("Out")
             .Attr("porder", 2.0f)
             .Attr("axis", -1)
             .Attr("epsilon", 1e-12f)
             .Attr("keepdim", false)
             .Attr("asvector", false)
             .InferShape(InferPNorm)
             .Grad("p_norm_grad", {"X", "Out", "Out@GRAD"}, {"X@GRAD"}));
  r->Add(OpSchema("p_norm_grad")
             .Input("X")
             .Input("Out")
             .Input("Out@GRAD")
             .Output("X@GRAD")
             .Attr("porder", 2.0f)
             .Attr("axis", -1)
             .Attr("epsilon", 1e-12f)
             .Attr("keepdim", false)
             .Attr("asvector", false)
             .InferShape([](ShapeContext& ctx) {
               ctx.SetOutput("X@GRAD", ctx.InputDims("X"), ctx.InputDType("X"));
               return Status::Ok();
             }));
  r->Add(OpSchema("logsumexp")
             .Input("X")
             .Output("Out")
             .Attr("axis", std::vector<int>{0})
             .Attr("keepdim", false)
             .Attr("reduce_all", false)
             .InferShape(InferLogsumexp)
             .Grad("logsumexp_grad", {"X", "Out", "Out@GRAD"}, {"X@GRAD"}));
  r->Add(OpSchema("logsumexp_grad")
             .Input("X")
             .Input("Out")
             .Input("Out@GRAD")
             .Output("X@GRAD")
             .Attr("axis", std::vector<int>{0})
             .Attr("keepdim", false)
             .Attr("reduce_all", false)
             .InferShape([](ShapeContext& ctx) {
               ctx.SetOutput("X@GRAD", ctx.InputDims("X"), ctx.InputDType("X"));
               return Status::Ok();
             }));
  r->Add(OpSchema("sum")
             .Input("X", kDuplicable)
             .Output("Out")
             .Inplace("X", "Out")
             .Attr("use_mkldnn", false)
             .InferShape(InferSum));
  for (bool grad : {false, true}) {
    OpSchema s(grad ? "cumsum_grad" : "cumsum");
    s.Input("X");
    if (grad) {
      s.Input("Out@GRAD").Output("X@GRAD").InferShape(InferCumsumGrad);
      s.KernelDTypeFromInput("Out@GRAD");
    } else {
      s.Output("Out")
          .InferShape(InferCumsum)
          .Grad("cumsum_grad", {"X", "Out@GRAD"}, {"X@GRAD"});
    }
    s.Attr("axis", -1)
        .Attr("flatten", false)
        .Attr("exclusive", false)
        .Attr("reverse", false);
    r->Add(std::move(s));
  }
}

}  // namespace parex
