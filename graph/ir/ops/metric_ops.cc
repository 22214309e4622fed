// Metric ops: top_k (the k largest values along the last dim and their
// indices) and top_k_v2 (along `axis`, the largest or the smallest, Paddle
// 2.x's accuracy uses it) with their gradient ops, and accuracy (the fraction
// of rows whose label is among their top-k indices). And the label ops of
// Paddle 2.x, without gradients:
// arg_max: the index of the largest value along `axis` (the first of
//   equals; NaN never wins), as int64 (dtype 3) or int32 (dtype 2); with
//   flatten, over every element. The axis goes, or stays as a 1 with
//   keepdims (flatten and keepdims: every dim a 1). Paddle 2.6 gives a 0-D
//   result where no dim is left; parex gives [1].
// one_hot_v2: Out is X's dims plus `depth`, a 1 at each index X holds
//   (int32 or int64), of `dtype` (fp32 by default). An index outside
//   [0, depth) is an error unless allow_out_of_range, which leaves its row
//   zero (Paddle 2.6 itself ignores that attribute and always errs). The
//   depth_tensor input is refused.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/ir/ops/op_groups.h"
#include "graph/ir/spec/value_inputs.h"

namespace parex {
namespace {

// Out and Indices are X's dims with extent k along the axis: top_k's last,
// top_k_v2's `axis`. k may exceed an unknown (compile-time) extent; at run
// time it must not exceed the real one.
Status InferTopKAlong(ShapeContext& ctx, bool v2) {
  // top_k_v2's K tensor gives k at run time instead of the attribute.
  const bool k_later = v2 && !ctx.IsRuntime() && ctx.HasInput("K");
  int64_t k = ctx.Attr<int>("k");
  if (v2 && !k_later) {
    PAREX_ASSIGN_OR_RETURN(k, IntFromInputOrAttr(ctx, "K", k));
  }
  if (k < 1) return ctx.Error("k = " + std::to_string(k) + " must be >= 1");
  Dims dims = ctx.InputDims("X");
  if (!Known(ctx, dims) || k_later) {
    ctx.SetOutput("Out", {}, ctx.InputDType("X"));
    ctx.SetOutput("Indices", {}, DType::kInt64);
    return Status::Ok();
  }
  if (dims.empty()) return ctx.Error("X must have rank >= 1");
  const int rank = static_cast<int>(dims.size());
  const int attr = v2 ? ctx.Attr<int>("axis") : rank - 1;
  const int axis = attr < 0 ? attr + rank : attr;
  if (axis < 0 || axis >= rank) {
    return ctx.Error("axis " + std::to_string(attr) + " is outside X " +
                     DimsToString(dims));
  }
  if (dims[axis] >= 0 && dims[axis] < k) {
    return ctx.Error(
        "k = " + std::to_string(k) + " exceeds " +
        (v2 ? "dim " + std::to_string(axis) : std::string("the last dim")) +
        " of X " + DimsToString(dims));
  }
  dims[axis] = k;
  ctx.SetOutput("Out", dims, ctx.InputDType("X"));
  ctx.SetOutput("Indices", dims, DType::kInt64);
  return Status::Ok();
}

Status InferTopK(ShapeContext& ctx) { return InferTopKAlong(ctx, false); }
Status InferTopKV2(ShapeContext& ctx) { return InferTopKAlong(ctx, true); }

Status InferTopKGrad(ShapeContext& ctx) {
  const Dims indices = ctx.InputDims("Indices");
  const Dims dout = ctx.InputDims("Out@GRAD");
  if (Known(ctx, indices) && Known(ctx, dout) &&
      !SameDims(ctx, indices, dout)) {
    return ctx.Error("Out@GRAD " + DimsToString(dout) +
                     " does not match Indices " + DimsToString(indices));
  }
  ctx.SetOutput("X@GRAD", ctx.InputDims("X"), ctx.InputDType("Out@GRAD"));
  return Status::Ok();
}

// Out and Indices [N, k] (Out only selects the kernel), Label [N, 1].
Status InferAccuracy(ShapeContext& ctx) {
  const Dims out = ctx.InputDims("Out");
  const Dims indices = ctx.InputDims("Indices");
  const Dims label = ctx.InputDims("Label");
  if (Known(ctx, indices)) {
    if (indices.size() != 2) {
      return ctx.Error("Indices must have rank 2, got " +
                       DimsToString(indices));
    }
    if (Known(ctx, out) && !SameDims(ctx, out, indices)) {
      return ctx.Error("Out " + DimsToString(out) + " does not match Indices " +
                       DimsToString(indices));
    }
  }
  if (Known(ctx, label)) {
    if (label.size() != 2 || !ExtentsAgree(label[1], 1)) {
      return ctx.Error("Label must be [N, 1], got " + DimsToString(label));
    }
    if (Known(ctx, indices) && !ExtentsAgree(label[0], indices[0])) {
      return ctx.Error("Label " + DimsToString(label) + " and Indices " +
                       DimsToString(indices) + " differ in rows");
    }
  }
  for (const char* slot : {"Indices", "Label"}) {
    const DType t = ctx.InputDType(slot);
    if (t != DType::kUndefined && t != DType::kInt64) {
      return ctx.Error(std::string(slot) + " must be int64, got " +
                       DTypeName(t));
    }
  }
  ctx.SetOutput("Accuracy", {1}, DType::kFP32);
  ctx.SetOutput("Correct", {1}, DType::kInt32);
  ctx.SetOutput("Total", {1}, DType::kInt32);
  return Status::Ok();
}

Status InferArgMax(ShapeContext& ctx) {
  const int dtype = ctx.Attr<int>("dtype");
  if (dtype != static_cast<int>(DType::kInt64) &&
      dtype != static_cast<int>(DType::kInt32)) {
    return ctx.Error("dtype " + std::to_string(dtype) +
                     " is neither int64 (3) nor int32 (2)");
  }
  const DType out_dtype = static_cast<DType>(dtype);
  const Dims x = ctx.InputDims("X");
  if (!Known(ctx, x)) {
    ctx.SetOutput("Out", {}, out_dtype);
    return Status::Ok();
  }
  const int rank = static_cast<int>(x.size());
  const bool keepdims = ctx.Attr<bool>("keepdims");
  const int64_t axis = ctx.Attr<int64_t>("axis");
  Dims out;
  if (ctx.Attr<bool>("flatten")) {
    if (keepdims) out.assign(x.size(), 1);
  } else {
    if (axis < -rank || axis >= rank) {
      return ctx.Error("axis " + std::to_string(axis) +
                       " is out of range for X " + DimsToString(x));
    }
    const int a = static_cast<int>(axis < 0 ? axis + rank : axis);
    for (int d = 0; d < rank; ++d) {
      if (d != a) {
        out.push_back(x[d]);
      } else if (keepdims) {
        out.push_back(1);
      }
    }
  }
  if (out.empty()) out.push_back(1);  // Paddle 2.6: 0-D
  if (dtype == static_cast<int>(DType::kInt32) && Numel(x) > INT32_MAX) {
    return ctx.Error("X " + DimsToString(x) +
                     " has too many elements for int32 indices");
  }
  ctx.SetOutput("Out", out, out_dtype);
  return Status::Ok();
}

Status InferOneHot(ShapeContext& ctx) {
  if (ctx.HasInput("depth_tensor")) {
    return Unimplemented(
        ctx.op().Label() +
        ": input 'depth_tensor' (a tensor-valued attribute) is not supported; "
        "set the attribute depth");
  }
  const int depth = ctx.Attr<int>("depth");
  if (depth < 1)
    return ctx.Error("depth " + std::to_string(depth) + " must be >= 1");
  const int dtype = ctx.Attr<int>("dtype");
  const DType out = static_cast<DType>(dtype);
  if (out != DType::kFP32 && out != DType::kFP64 && out != DType::kInt32 &&
      out != DType::kInt64) {
    return ctx.Error("dtype " + std::to_string(dtype) +
                     " is not fp32 (5), fp64 (6), int32 (2) " + "or int64 (3)");
  }
  const DType in = ctx.InputDType("X");
  if (in != DType::kUndefined && in != DType::kInt32 && in != DType::kInt64) {
    return ctx.Error(std::string("X must be int32 or int64, got ") +
                     DTypeName(in));
  }
  Dims dims = ctx.InputDims("X");
  if (!Known(ctx, dims)) {
    ctx.SetOutput("Out", {}, out);
    return Status::Ok();
  }
  dims.push_back(depth);
  ctx.SetOutput("Out", dims, out);
  return Status::Ok();
}

}  // namespace

void RegisterMetricOps(OpSchemaRegistry* r) {
  r->Add(OpSchema("top_k")
             .Input("X")
             .Output("Out")
             .Output("Indices")
             .Attr("k", 1)
             .InferShape(InferTopK)
             .Grad("top_k_grad", {"X", "Indices", "Out@GRAD"}, {"X@GRAD"}));
  r->Add(OpSchema("top_k_grad")
             .Input("X")
             .Input("Indices")
             .Input("Out@GRAD")
             .Output("X@GRAD")
             .Attr("k", 1)
             .InferShape(InferTopKGrad)
             .KernelDTypeFromInput("Out@GRAD"));
  r->Add(OpSchema("top_k_v2")
             .Input("X")
             .Input("K", kOptional)
             .ShapeFromValues({"K"})
             .Output("Out")
             .Output("Indices")
             .Attr("k", 1)
             .Attr("axis", -1)
             .Attr("largest", true)
             .Attr("sorted", true)
             .InferShape(InferTopKV2)
             .Grad("top_k_v2_grad", {"X", "Indices", "Out@GRAD"}, {"X@GRAD"}));
  r->Add(OpSchema("top_k_v2_grad")
             .Input("X")
             .Input("Indices")
             .Input("K", kOptional)  // Paddle records it; Indices say it all
             .Input("Out@GRAD")
             .Output("X@GRAD")
             .Attr("k", 1)
             .Attr("axis", -1)
             .Attr("largest", true)
             .Attr("sorted", true)
             .InferShape(InferTopKGrad)
             .KernelDTypeFromInput("Out@GRAD"));
  r->Add(OpSchema("accuracy")
             .Input("Out")
             .Input("Indices")
             .Input("Label")
             .Output("Accuracy")
             .Output("Correct")
             .Output("Total")
             .InferShape(InferAccuracy));
  r->Add(OpSchema("arg_max")
             .Input("X")
             .Output("Out")
             .RequiredAttr("axis", proto::LONG)
             .Attr("keepdims", false)
             .Attr("flatten", false)
             .Attr("dtype", static_cast<int>(DType::kInt64))
             .InferShape(InferArgMax));
  r->Add(OpSchema("one_hot_v2")
             .Input("X")
             .Input("depth_tensor", kOptional)
             .Output("Out")
             .Attr("depth", -1)
             .Attr("dtype", static_cast<int>(DType::kFP32))
             .Attr("allow_out_of_range", false)
             .InferShape(InferOneHot));
}

}  // namespace parex
