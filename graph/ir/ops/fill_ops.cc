// Ops that make or copy tensors: fill_constant, uniform_random and
// gaussian_random (Out of attribute `shape` and `dtype`),
// fill_constant_batch_size_like (the same, with one extent taken from an
// input: Out's dim `output_dim_idx` is Input's dim `input_dim_idx`; no
// gradient), assign (a copy), scale (Out = scale * X + bias, or
// scale * (X + bias)) and cast.
//
// Fluid's gradients of assign, scale and cast are the same ops again with
// renamed slots (scale's reads Out@GRAD through slot X), which a Grad(...)
// spec cannot express, so these schemas declare no gradient op; programs
// from Paddle carry those ops explicitly.
#include <string>
#include <vector>

#include "graph/ir/ops/op_groups.h"

namespace parex {
namespace {

// Out of attribute `shape` and `dtype`. -1 extents are accepted at compile
// time (a batch size known only when the op runs is an error then).
Status InferFromShapeAttr(ShapeContext& ctx) {
  const std::vector<int64_t> shape = ctx.Attr<std::vector<int64_t>>("shape");
  for (int64_t d : shape) {
    if (d < -1 || (d == -1 && ctx.IsRuntime())) {
      return ctx.Error("attribute shape " + DimsToString(shape) +
                       " has a negative extent");
    }
  }
  const int dtype = ctx.Attr<int>("dtype");
  if (!IsElementType(dtype)) {
    return ctx.Error("attribute dtype " + std::to_string(dtype) +
                     " is no element type");
  }
  ctx.SetOutput("Out", shape, static_cast<DType>(dtype));
  return Status::Ok();
}

Status InferFillBatchSizeLike(ShapeContext& ctx) {
  std::vector<int64_t> shape = ctx.Attr<std::vector<int64_t>>("shape");
  if (shape.empty()) return ctx.Error("attribute shape is empty");
  const int dtype = ctx.Attr<int>("dtype");
  if (!IsElementType(dtype)) {
    return ctx.Error("attribute dtype " + std::to_string(dtype) +
                     " is no element type");
  }
  const Dims in = ctx.InputDims("Input");
  const int in_idx = ctx.Attr<int>("input_dim_idx");
  const int out_idx = ctx.Attr<int>("output_dim_idx");
  if (out_idx < 0 || out_idx >= static_cast<int>(shape.size())) {
    return ctx.Error("output_dim_idx " + std::to_string(out_idx) +
                     " is outside shape " + DimsToString(shape));
  }
  if (!ctx.IsUnknown(in) &&
      (in_idx < 0 || in_idx >= static_cast<int>(in.size()))) {
    return ctx.Error("input_dim_idx " + std::to_string(in_idx) +
                     " is outside Input " + DimsToString(in));
  }
  shape[out_idx] = ctx.IsUnknown(in) ? -1 : in[in_idx];
  for (int64_t d : shape) {
    // -1 stays unknown at compile time, as in Paddle; it has no value to
    // take when the op runs.
    if (d < -1 || (d == -1 && ctx.IsRuntime())) {
      return ctx.Error("shape " + DimsToString(shape) +
                       " (with Input's extent at " + std::to_string(out_idx) +
                       ") has a negative extent");
    }
  }
  ctx.SetOutput("Out", shape, static_cast<DType>(dtype));
  return Status::Ok();
}

Status InferCopy(ShapeContext& ctx) {
  ctx.ShareDimsAndDType("X", "Out");
  return Status::Ok();
}

Status InferScale(ShapeContext& ctx) {
  if (ctx.HasInput("ScaleTensor")) {
    const Dims s = ctx.InputDims("ScaleTensor");
    if ((ctx.IsRuntime() || !s.empty()) && Numel(s) != 1 && Numel(s) >= 0) {
      return ctx.Error("ScaleTensor " + DimsToString(s) +
                       " must hold one element");
    }
  }
  ctx.ShareDimsAndDType("X", "Out");
  return Status::Ok();
}

Status InferCast(ShapeContext& ctx) {
  const int out_dtype = ctx.Attr<int>("out_dtype");
  if (!IsElementType(out_dtype)) {
    return ctx.Error("out_dtype " + std::to_string(out_dtype) +
                     " is no element type");
  }
  ctx.SetOutput("Out", ctx.InputDims("X"), static_cast<DType>(out_dtype));
  return Status::Ok();
}

}  // namespace

void RegisterFillOps(OpSchemaRegistry* r) {
  const int kFP32 = static_cast<int>(DType::kFP32);
  r->Add(OpSchema("fill_constant")
             .Output("Out")
             .Attr("shape", std::vector<int64_t>{})
             .Attr("value", 0.0f)
             .Attr("str_value", std::string())
             .Attr("dtype", kFP32)
             .Attr("force_cpu", false)
             .InferShape(InferFromShapeAttr)
             .KernelDTypeFromAttr("dtype"));
  r->Add(OpSchema("fill_constant_batch_size_like")
             .Input("Input")
             .Output("Out")
             .RequiredAttr("shape", proto::INTS)
             .Attr("value", 0.0f)
             .Attr("str_value", std::string())
             .Attr("dtype", kFP32)
             .Attr("input_dim_idx", 0)
             .Attr("output_dim_idx", 0)
             .Attr("force_cpu", false)
             .InferShape(InferFillBatchSizeLike)
             .KernelDTypeFromAttr("dtype"));
  r->Add(OpSchema("uniform_random")
             .Output("Out")
             .Attr("shape", std::vector<int64_t>{})
             .Attr("min", -1.0f)
             .Attr("max", 1.0f)
             .Attr("seed", 0)
             .Attr("diag_num", 0)
             .Attr("diag_step", 0)
             .Attr("diag_val", 1.0f)
             .Attr("dtype", kFP32)
             .InferShape(InferFromShapeAttr)
             .KernelDTypeFromAttr("dtype"));
  r->Add(OpSchema("gaussian_random")
             .Output("Out")
             .Attr("shape", std::vector<int64_t>{})
             .Attr("mean", 0.0f)
             .Attr("std", 1.0f)
             .Attr("seed", 0)
             .Attr("dtype", kFP32)
             .InferShape(InferFromShapeAttr)
             .KernelDTypeFromAttr("dtype"));
  r->Add(OpSchema("assign")
             .Input("X")
             .Output("Out")
             .Inplace("X", "Out")
             .InferShape(InferCopy));
  r->Add(OpSchema("scale")
             .Input("X")
             .Input("ScaleTensor", kOptional)
             .Output("Out")
             .Inplace("X", "Out")
             .Attr("scale", 1.0f)
             .Attr("bias", 0.0f)
             .Attr("bias_after_scale", true)
             .InferShape(InferScale)
             .KernelDTypeFromInput("X"));
  r->Add(OpSchema("cast")
             .Input("X")
             .Output("Out")
             .RequiredAttr("in_dtype", proto::INT)
             .RequiredAttr("out_dtype", proto::INT)
             .InferShape(InferCast));
}

}  // namespace parex
