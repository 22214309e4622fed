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
#include <cmath>
#include <string>
#include <vector>

#include "graph/ir/ops/op_groups.h"
#include "graph/ir/spec/value_inputs.h"

namespace parex {
namespace {

// Out of attribute `shape` and `dtype`. -1 extents are accepted at compile
// time (a batch size known only when the op runs is an error then).
// fill_constant's shape as tensors, Paddle's priority order: ShapeTensor (one
// tensor), ShapeTensorList (one single-value tensor per extent), the
// attribute.
constexpr std::initializer_list<ValueInput> kFillShape = {
    {"ShapeTensor", false}, {"ShapeTensorList", true}};

Status InferFromShapeAttr(ShapeContext& ctx) {
  const int dtype_attr = ctx.Attr<int>("dtype");
  if (!ctx.IsRuntime() && BindsAny(ctx, kFillShape)) {
    if (IsElementType(dtype_attr)) {
      ctx.SetOutput("Out", {}, static_cast<DType>(dtype_attr));
    }
    return Status::Ok();
  }
  PAREX_ASSIGN_OR_RETURN(
      const std::vector<int64_t> shape,
      IntsFromInputsOrAttr(ctx, kFillShape,
                           ctx.Attr<std::vector<int64_t>>("shape")));
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

// range: Out = [Start, Start + Step, ...) up to End (each one value, of
// one dtype). The length depends on the values: unknown (-1) at compile
// time; at run time Paddle's rule (an integer length rounds up the steps,
// a float one is ceil(|End - Start| / |Step|)), with Step 0 or pointing
// away from End an error, and the length bounded before any allocation.
Status InferRange(ShapeContext& ctx) {
  const DType dtype = ctx.InputDType("Start");
  for (const char* slot : {"End", "Step"}) {
    if (ctx.InputDType(slot) != dtype) {
      return ctx.Error(std::string(slot) + " is " +
                       DTypeName(ctx.InputDType(slot)) + ", Start is " +
                       DTypeName(dtype));
    }
  }
  if (!ctx.IsRuntime()) {
    ctx.SetOutput("Out", {-1}, dtype);
    return Status::Ok();
  }
  double v[3];
  const char* slots[3] = {"Start", "End", "Step"};
  for (int k = 0; k < 3; ++k) {
    PAREX_ASSIGN_OR_RETURN(std::vector<double> values,
                           ctx.InputValues(slots[k]));
    if (values.size() != 1 || !std::isfinite(values[0])) {
      return ctx.Error(std::string(slots[k]) + " must hold one finite value");
    }
    v[k] = values[0];
  }
  const double start = v[0], end = v[1], step = v[2];
  if (step == 0) return ctx.Error("Step is 0");
  if ((start < end && step < 0) || (start > end && step > 0)) {
    return ctx.Error("Step " + std::to_string(step) + " leads away from End " +
                     std::to_string(end) + " (Start " + std::to_string(start) +
                     ")");
  }
  const bool integral = dtype == DType::kInt32 || dtype == DType::kInt64;
  // In the dtype's own arithmetic, as Paddle's GetSize<T>.
  const float f_start = static_cast<float>(start),
              f_end = static_cast<float>(end),
              f_step = static_cast<float>(step);
  const double length =
      integral ? std::floor((std::abs(end - start) + std::abs(step) - 1) /
                            std::abs(step))
      : dtype == DType::kFP32
          ? static_cast<double>(std::ceil(std::abs((f_end - f_start) / f_step)))
          : std::ceil(std::abs((end - start) / step));
  constexpr double kMaxLength = static_cast<double>(int64_t{1} << 40);
  if (!(length <= kMaxLength)) {
    return ctx.Error("a range of " + std::to_string(length) +
                     " values is more than parex makes (2^40)");
  }
  ctx.SetOutput("Out", {static_cast<int64_t>(length)}, dtype);
  return Status::Ok();
}

// fill_any_like: X's dims; dtype -1 keeps X's.
Status InferFillAnyLike(ShapeContext& ctx) {
  const int dtype = ctx.Attr<int>("dtype");
  if (dtype != -1 && !IsElementType(dtype)) {
    return ctx.Error("dtype " + std::to_string(dtype) +
                     " is not an element type");
  }
  ctx.SetOutput("Out", ctx.InputDims("X"),
                dtype == -1 ? ctx.InputDType("X") : static_cast<DType>(dtype));
  return Status::Ok();
}

// assign_value: Out of `shape` and `dtype`, from the values attribute of
// that dtype (checked against the element count by the kernel).
Status InferAssignValue(ShapeContext& ctx) {
  const int dtype = ctx.Attr<int>("dtype");
  if (!IsElementType(dtype)) {
    return ctx.Error("dtype " + std::to_string(dtype) +
                     " is not an element type");
  }
  const std::vector<int> shape = ctx.Attr<std::vector<int>>("shape");
  for (int e : shape) {
    if (e < 0) return ctx.Error("shape has a negative extent");
  }
  ctx.SetOutput("Out", Dims(shape.begin(), shape.end()),
                static_cast<DType>(dtype));
  return Status::Ok();
}

// linspace: Num values (a tensor: known at run time) from Start to Stop.
Status InferLinspace(ShapeContext& ctx) {
  const int dtype = ctx.Attr<int>("dtype");
  if (!IsElementType(dtype)) {
    return ctx.Error("dtype " + std::to_string(dtype) +
                     " is not an element type");
  }
  if (!ctx.IsRuntime()) {
    ctx.SetOutput("Out", {-1}, static_cast<DType>(dtype));
    return Status::Ok();
  }
  PAREX_ASSIGN_OR_RETURN(std::vector<double> num, ctx.InputValues("Num"));
  if (num.size() != 1 || !(num[0] > 0) || num[0] > (int64_t{1} << 40)) {
    return ctx.Error("Num must be one count in [1, 2^40]");
  }
  ctx.SetOutput("Out", {static_cast<int64_t>(num[0])},
                static_cast<DType>(dtype));
  return Status::Ok();
}

}  // namespace

void RegisterFillOps(OpSchemaRegistry* r) {
  r->Add(OpSchema("assign_value")
             .Output("Out")
             .RequiredAttr("shape", proto::INTS)
             .RequiredAttr("dtype", proto::INT)
             .Attr("bool_values", std::vector<int>{})
             .Attr("fp32_values", std::vector<float>{})
             .Attr("int32_values", std::vector<int>{})
             .Attr("int64_values", std::vector<int64_t>{})
             .InferShape(InferAssignValue)
             .KernelDTypeFromAttr("dtype"));
  r->Add(OpSchema("linspace")
             .Input("Start")
             .Input("Stop")
             .Input("Num")
             .Output("Out")
             .RequiredAttr("dtype", proto::INT)
             .InferShape(InferLinspace)
             .ShapeFromValues()
             .KernelDTypeFromAttr("dtype"));
  r->Add(OpSchema("fill_any_like")
             .Input("X")
             .Output("Out")
             .Attr("value", 0.0f)
             .Attr("dtype", -1)
             .InferShape(InferFillAnyLike));
  r->Add(OpSchema("range")
             .Input("Start")
             .Input("End")
             .Input("Step")
             .Output("Out")
             .InferShape(InferRange)
             .ShapeFromValues());
  const int kFP32 = static_cast<int>(DType::kFP32);
  r->Add(OpSchema("fill_constant")
             .Input("ShapeTensor", kOptional)
             .Input("ShapeTensorList", kOptional | kDuplicable)
             .Input("ValueTensor", kOptional)
             .Output("Out")
             .ShapeFromValues({"ShapeTensor", "ShapeTensorList"})
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
