// nearest_interp_v2, bilinear_interp_v2 and their gradient ops (Paddle 2.6's
// slots and attributes): X [N, C, H, W] -> Out [N, C, out_h, out_w]. With a
// non-empty `scale` attribute {scale_h, scale_w} the output extents are
// int(H * scale_h), int(W * scale_w) (float products, as Paddle computes
// them); otherwise the out_h / out_w attributes; the OutSize, SizeTensor and
// Scale inputs give them at run time instead (graph/ir/spec/interp_spec.h).
// As in Paddle, the `interp_method` attribute (not the op type) picks
// bilinear or nearest: its default is "bilinear" for both ops. NHWC runs
// through graph/ir/spec/channels_last.h; rank 3 / 5 inputs and bicubic /
// linear / trilinear are refused.
// Paddle 2.6 records the gradient op with X, OutSize, SizeTensor, Scale and
// Out@GRAD.
#include <string>
#include <vector>

#include "graph/ir/ops/op_groups.h"
#include "graph/ir/spec/channels_last.h"
#include "graph/ir/spec/interp_spec.h"
#include "graph/ir/spec/window_spec.h"

namespace parex {
namespace {

std::string FloatsToString(const std::vector<float>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(v[i]);
  }
  return s + "}";
}

Status CheckInterp(const ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckChannelsFirst(ctx, "data_layout", "NCHW"));
  const std::string method = ctx.Attr<std::string>("interp_method");
  if (method == "bicubic" || method == "linear" || method == "trilinear") {
    return Unimplemented(ctx.op().Label() + ": interp_method '" + method +
                         "' (only bilinear and nearest are supported)");
  }
  if (method != "bilinear" && method != "nearest") {
    return ctx.Error("interp_method must be bilinear or nearest, got '" +
                     method + "'");
  }
  const int align_mode = ctx.Attr<int>("align_mode");
  if (align_mode != 0 && align_mode != 1) {
    return ctx.Error("align_mode must be 0 or 1, got " +
                     std::to_string(align_mode));
  }
  const std::vector<float> scale = ctx.Attr<std::vector<float>>("scale");
  if (!scale.empty()) {
    if (scale.size() != 2) {
      return ctx.Error("scale must be empty or {scale_h, scale_w}, got " +
                       FloatsToString(scale));
    }
    if (!(scale[0] > 0) || !(scale[1] > 0)) {
      return ctx.Error("scale " + FloatsToString(scale) + " must be positive");
    }
  }
  return Status::Ok();
}

StatusOr<Dims> InterpOutDims(const ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  if (x.size() == 3 || x.size() == 5) {
    return Unimplemented(ctx.op().Label() + ": X " + DimsToString(x) +
                         " (only rank 4, NCHW, is supported)");
  }
  if (x.size() != 4) {
    return ctx.Error("X " + DimsToString(x) + " must have rank 4 (NCHW)");
  }
  Dims out = x;
  // Sizes from tensors are known at run time only.
  if (!ctx.IsRuntime() && BindsAny(ctx, kInterpSizeInputs)) {
    out[2] = out[3] = -1;
    return out;
  }
  if (x[2] < 0 || x[3] < 0) {
    const std::vector<float> scale = ctx.Attr<std::vector<float>>("scale");
    if (!scale.empty()) {  // an unknown extent stays unknown
      for (int d = 0; d < 2; ++d) {
        out[2 + d] =
            x[2 + d] < 0
                ? -1
                : static_cast<int>(static_cast<float>(x[2 + d]) * scale[d]);
      }
      return out;
    }
  }
  PAREX_ASSIGN_OR_RETURN(InterpSizes sizes, InterpSizesOf(ctx, x[2], x[3]));
  out[2] = sizes.out_h;
  out[3] = sizes.out_w;
  return out;
}

Status InferInterp(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckInterp(ctx));
  ctx.SetOutputDType("Out", 0, ctx.InputDType("X"));
  if (ctx.IsUnknown(ctx.InputDims("X"))) return Status::Ok();
  PAREX_ASSIGN_OR_RETURN(Dims out, InterpOutDims(ctx));
  ctx.SetOutputDims("Out", 0, out);
  return Status::Ok();
}

Status InferInterpGrad(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckInterp(ctx));
  PAREX_RETURN_IF_ERROR(ctx.CheckSameDType({"X", "Out@GRAD"}));
  if (!ctx.IsUnknown(ctx.InputDims("X"))) {
    PAREX_ASSIGN_OR_RETURN(Dims out, InterpOutDims(ctx));
    PAREX_RETURN_IF_ERROR(ctx.CheckGradDims("Out@GRAD", out));
  }
  return InferGradShapesFromForwardInputs(ctx);
}

}  // namespace

void RegisterInterpOps(OpSchemaRegistry* r) {
  for (const char* type : {"nearest_interp_v2", "bilinear_interp_v2"}) {
    const std::string grad_type = std::string(type) + "_grad";
    for (bool grad : {false, true}) {
      OpSchema s(grad ? grad_type : std::string(type));
      s.Input("X")
          .Input("OutSize", kOptional)
          .Input("SizeTensor", kOptional | kDuplicable)
          .Input("Scale", kOptional);
      if (grad) {
        s.Input("Out@GRAD")
            .Output("X@GRAD", kOptional)
            .InferShape(WithChannelsLast(InferInterpGrad));
        s.ShapeFromValues({"OutSize", "SizeTensor", "Scale"});
        s.KernelDTypeFromInput("Out@GRAD");
      } else {
        s.Output("Out")
            .ShapeFromValues({"OutSize", "SizeTensor", "Scale"})
            .InferShape(WithChannelsLast(InferInterp))
            .Grad(grad_type,
                  {"X", "OutSize", "SizeTensor", "Scale", "Out@GRAD"},
                  {"X@GRAD"});
      }
      // Paddle 2.6's defaults (its op proto), the same for both ops.
      s.Attr("data_layout", std::string("NCHW"))
          .Attr("out_d", 0)
          .Attr("out_h", 0)
          .Attr("out_w", 0)
          .Attr("scale", std::vector<float>{})
          .Attr("interp_method", std::string("bilinear"))
          .Attr("align_corners", true)
          .Attr("align_mode", 1);
      r->Add(std::move(s));
    }
  }
}

}  // namespace parex
