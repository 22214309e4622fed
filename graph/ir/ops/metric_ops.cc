// Metric ops: top_k (the k largest values along the last dim and their
// indices) and top_k_v2 (along `axis`, the largest or the smallest, Paddle
// 2.x's accuracy uses it) with their gradient ops, and accuracy (the fraction of rows
// whose label is among their top-k indices).
#include <string>

#include "graph/ir/ops/op_groups.h"

namespace parex {
namespace {

bool Known(const ShapeContext& ctx, const Dims& dims) {
  return ctx.IsRuntime() || !dims.empty();
}

bool SameDims(const Dims& a, const Dims& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!ExtentsAgree(a[i], b[i])) return false;
  }
  return true;
}

// Out and Indices are X's dims with the last extent k. k may exceed an
// unknown (compile-time) extent; at run time it must not exceed the real one.
Status InferTopK(ShapeContext& ctx) {
  const int k = ctx.Attr<int>("k");
  if (k < 1) return ctx.Error("k = " + std::to_string(k) + " must be >= 1");
  Dims dims = ctx.InputDims("X");
  if (!Known(ctx, dims)) {
    ctx.SetOutput("Out", {}, ctx.InputDType("X"));
    ctx.SetOutput("Indices", {}, DType::kInt64);
    return Status::Ok();
  }
  if (dims.empty()) return ctx.Error("X must have rank >= 1");
  if (dims.back() >= 0 && dims.back() < k) {
    return ctx.Error("k = " + std::to_string(k) +
                     " exceeds the last dim of X " + DimsToString(dims));
  }
  dims.back() = k;
  ctx.SetOutput("Out", dims, ctx.InputDType("X"));
  ctx.SetOutput("Indices", dims, DType::kInt64);
  return Status::Ok();
}

// top_k_v2: Out and Indices are X's dims with extent k along `axis`.
Status InferTopKV2(ShapeContext& ctx) {
  if (ctx.HasInput("K")) {
    return ctx.Error("a K input (k from a tensor) is not supported; set the "
                     "attribute k");
  }
  const int k = ctx.Attr<int>("k");
  if (k < 1) return ctx.Error("k = " + std::to_string(k) + " must be >= 1");
  Dims dims = ctx.InputDims("X");
  if (!Known(ctx, dims)) {
    ctx.SetOutput("Out", {}, ctx.InputDType("X"));
    ctx.SetOutput("Indices", {}, DType::kInt64);
    return Status::Ok();
  }
  const int rank = static_cast<int>(dims.size());
  const int attr = ctx.Attr<int>("axis");
  const int axis = attr < 0 ? attr + rank : attr;
  if (axis < 0 || axis >= rank) {
    return ctx.Error("axis " + std::to_string(attr) + " is outside X " +
                     DimsToString(dims));
  }
  if (dims[axis] >= 0 && dims[axis] < k) {
    return ctx.Error("k = " + std::to_string(k) + " exceeds dim " +
                     std::to_string(axis) + " of X " + DimsToString(dims));
  }
  dims[axis] = k;
  ctx.SetOutput("Out", dims, ctx.InputDType("X"));
  ctx.SetOutput("Indices", dims, DType::kInt64);
  return Status::Ok();
}

Status InferTopKGrad(ShapeContext& ctx) {
  const Dims indices = ctx.InputDims("Indices");
  const Dims dout = ctx.InputDims("Out@GRAD");
  if (Known(ctx, indices) && Known(ctx, dout) && !SameDims(indices, dout)) {
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
    if (Known(ctx, out) && !SameDims(out, indices)) {
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
}

}  // namespace parex
