// pad3d and its gradient op (Paddle 2.6's slots and attributes): X
// [N, C, D, H, W] -> Out [N, C, D + front + back, H + top + bottom,
// W + left + right], paddings {left, right, top, bottom, front, back} (the
// last dim first, as Paddle orders them); mode constant (`value` outside),
// reflect (mirrored without repeating the edge; each padding below the
// extent), replicate (the edge repeated), circular (wrapped). The optional
// Paddings tensor gives them at run time instead (window_spec.h's
// Pad3dPaddings); NDHWC runs as NCDHW between moves of the channel axis
// (graph/ir/spec/channels_last.h), the paddings unchanged. Paddle 2.6
// records the gradient op with X, Paddings and Out@GRAD.
#include <string>
#include <vector>

#include "graph/ir/ops/op_groups.h"
#include "graph/ir/spec/channels_last.h"
#include "graph/ir/spec/window_spec.h"

namespace parex {
namespace {

// NDHWC reaches the shape rules as an NCDHW view (WithChannelsLast).
Status CheckPad3d(const ShapeContext& ctx) {
  const std::string format = ctx.Attr<std::string>("data_format");
  if (format == "NCDHW") return Status::Ok();
  return ctx.Error("data_format '" + format + "' is neither NCDHW nor NDHWC");
}

StatusOr<Dims> Pad3dOutDims(const ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  if (x.size() != 5) {
    return ctx.Error("X " + DimsToString(x) + " must have rank 5 (NCDHW)");
  }
  if (!ctx.IsRuntime() && ctx.HasInput("Paddings")) {
    return Dims{x[0], x[1], -1, -1, -1};  // known at run time only
  }
  PAREX_ASSIGN_OR_RETURN(const std::vector<int> p, Pad3dPaddings(ctx));
  const std::string mode = ctx.Attr<std::string>("mode");
  if (mode != "constant" && mode != "reflect" && mode != "replicate" &&
      mode != "circular") {
    return ctx.Error(
        "mode must be constant, reflect, replicate or circular, "
        "got '" +
        mode + "'");
  }
  Dims out = x;
  for (int i = 0; i < 3; ++i) {
    const int64_t in = x[4 - i];  // paddings 2i, 2i+1 pad dim 4 - i
    const int before = p[2 * i], after = p[2 * i + 1];
    if (in < 0) continue;
    if (mode == "reflect" && (before >= in || after >= in)) {
      return ctx.Error("reflect paddings " + IntsToString(p) +
                       " must be smaller than X's extent " +
                       std::to_string(in) + " in dim " + std::to_string(4 - i));
    }
    if ((mode == "replicate" || mode == "circular") && in == 0 &&
        before + after > 0) {
      return ctx.Error(mode + " padding of an empty dim " +
                       std::to_string(4 - i));
    }
    out[4 - i] = in + before + after;
  }
  return out;
}

Status InferPad3d(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckPad3d(ctx));
  ctx.SetOutputDType("Out", 0, ctx.InputDType("X"));
  if (ctx.IsUnknown(ctx.InputDims("X"))) return Status::Ok();
  PAREX_ASSIGN_OR_RETURN(Dims out, Pad3dOutDims(ctx));
  ctx.SetOutputDims("Out", 0, out);
  return Status::Ok();
}

Status InferPad3dGrad(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckPad3d(ctx));
  PAREX_RETURN_IF_ERROR(ctx.CheckSameDType({"X", "Out@GRAD"}));
  if (!ctx.IsUnknown(ctx.InputDims("X"))) {
    PAREX_ASSIGN_OR_RETURN(Dims out, Pad3dOutDims(ctx));
    PAREX_RETURN_IF_ERROR(ctx.CheckGradDims("Out@GRAD", out));
  }
  return InferGradShapesFromForwardInputs(ctx);
}

}  // namespace

void RegisterPadOps(OpSchemaRegistry* r) {
  for (bool grad : {false, true}) {
    OpSchema s(grad ? "pad3d_grad" : "pad3d");
    s.Input("X").Input("Paddings", kOptional).ShapeFromValues({"Paddings"});
    if (grad) {
      s.Input("Out@GRAD")
          .Output("X@GRAD", kOptional)
          .InferShape(WithChannelsLast(InferPad3dGrad));
      s.KernelDTypeFromInput("Out@GRAD");
    } else {
      s.Output("Out")
          .InferShape(WithChannelsLast(InferPad3d))
          .Grad("pad3d_grad", {"X", "Paddings", "Out@GRAD"}, {"X@GRAD"});
    }
    s.Attr("paddings", std::vector<int>(6, 0))
        .Attr("mode", std::string("constant"))
        .Attr("value", 0.0f)
        .Attr("data_format", std::string("NCDHW"));
    r->Add(std::move(s));
  }
}

}  // namespace parex
