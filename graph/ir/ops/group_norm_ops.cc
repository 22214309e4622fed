// Normalisation over groups of channels (Paddle's semantics):
//  - group_norm: X [N, C, ...] (data_layout NCHW) or [N, ..., C] (NHWC);
//    channels split into `groups` runs of C / groups; each (sample, group)
//    normalised by its mean and population variance, then per channel
//    Y = x_hat * Scale[c] + Bias[c]. Mean, Variance: [N, groups].
//  - instance_norm: X [N, C, ...]: each (sample, channel) normalised;
//    SavedMean [N*C] and SavedVariance [N*C] = 1 / sqrt(var + epsilon) (as
//    batch_norm saves it). Scale and Bias [C], optional.
// Kernels: kernels/cpu/group_norm_kernels.cc.
#include <string>

#include "graph/ir/ops/op_groups.h"

namespace parex {
namespace {

// X's layout: channel axis and channel count, after checking the rank and
// `groups` (which must divide C).
Status GroupNormChannels(const ShapeContext& ctx, const Dims& x, int groups,
                         bool nhwc, int64_t* channels) {
  if (x.size() < 2) {
    return ctx.Error("X " + DimsToString(x) +
                     " must have a batch and a "
                     "channel axis");
  }
  *channels = nhwc ? x.back() : x[1];
  if (groups < 1) {
    return ctx.Error("groups " + std::to_string(groups) + " must be >= 1");
  }
  if (*channels >= 0 && *channels % groups != 0) {
    return ctx.Error("groups " + std::to_string(groups) +
                     " does not divide the " + std::to_string(*channels) +
                     " channels of X " + DimsToString(x));
  }
  return Status::Ok();
}

Status CheckChannelVectors(const ShapeContext& ctx, int64_t channels) {
  for (const char* slot : {"Scale", "Bias"}) {
    if (!ctx.HasInput(slot)) continue;
    const Dims d = ctx.InputDims(slot);
    if (ctx.IsUnknown(d) || channels < 0) continue;
    if (Numel(d) != channels) {
      return ctx.Error(std::string(slot) + " " + DimsToString(d) +
                       " must hold one value per channel (" +
                       std::to_string(channels) + ")");
    }
  }
  return Status::Ok();
}

// The layout attribute: group_norm's data_layout; instance_norm has none.
StatusOr<bool> ChannelsLast(const ShapeContext& ctx) {
  if (ctx.op().type().rfind("instance_norm", 0) == 0) return false;
  const std::string layout = ctx.Attr<std::string>("data_layout");
  if (layout != "NCHW" && layout != "NHWC") {
    return ctx.Error("data_layout '" + layout + "' is neither NCHW nor NHWC");
  }
  return layout == "NHWC";
}

Status InferGroupNormCommon(ShapeContext& ctx, bool grad) {
  PAREX_RETURN_IF_ERROR(ctx.CheckSameDType({"X", "Scale", "Bias"}));
  const Dims x = ctx.InputDims("X");
  const DType dtype = ctx.InputDType("X");
  const bool instance = ctx.op().type().rfind("instance_norm", 0) == 0;
  PAREX_ASSIGN_OR_RETURN(bool nhwc, ChannelsLast(ctx));
  if (ctx.IsUnknown(x)) return Status::Ok();
  int64_t channels = 0;
  const int groups = instance ? 1 : ctx.Attr<int>("groups");
  PAREX_RETURN_IF_ERROR(GroupNormChannels(ctx, x, groups, nhwc, &channels));
  PAREX_RETURN_IF_ERROR(CheckChannelVectors(ctx, channels));
  if (grad) {
    if (ctx.HasInput("Y@GRAD") && !SameDims(ctx, ctx.InputDims("Y@GRAD"), x)) {
      return ctx.Error("Y@GRAD " + DimsToString(ctx.InputDims("Y@GRAD")) +
                       " differs from X " + DimsToString(x));
    }
    ctx.SetOutputDims("X@GRAD", 0, x);
    ctx.SetOutputDType("X@GRAD", 0, dtype);
    for (const char* out : {"Scale@GRAD", "Bias@GRAD"}) {
      ctx.SetOutputDims(out, 0, {channels});
      ctx.SetOutputDType(out, 0, dtype);
    }
    return Status::Ok();
  }
  ctx.SetOutputDims("Y", 0, x);
  ctx.SetOutputDType("Y", 0, dtype);
  const Dims stats = instance
                         ? Dims{x[0] < 0 || channels < 0 ? -1 : x[0] * channels}
                         : Dims{x[0], groups};
  for (const char* out : {"Mean", "Variance", "SavedMean", "SavedVariance"}) {
    ctx.SetOutputDims(out, 0, stats);
    ctx.SetOutputDType(out, 0, dtype);
  }
  return Status::Ok();
}

Status InferGroupNorm(ShapeContext& ctx) {
  return InferGroupNormCommon(ctx, false);
}
Status InferGroupNormGrad(ShapeContext& ctx) {
  return InferGroupNormCommon(ctx, true);
}

}  // namespace

void RegisterGroupNormOps(OpSchemaRegistry* r) {
  r->Add(OpSchema("group_norm")
             .Input("X")
             .Input("Scale", kOptional)
             .Input("Bias", kOptional)
             .Output("Y")
             .Output("Mean", kOptional)
             .Output("Variance", kOptional)
             .Attr("epsilon", 1e-5f)
             .Attr("groups", 1)
             .Attr("data_layout", std::string("NCHW"))
             .InferShape(InferGroupNorm)
             .Grad("group_norm_grad",
                   {"X", "Y", "Scale", "Bias", "Mean", "Variance", "Y@GRAD"},
                   {"X@GRAD", "Scale@GRAD", "Bias@GRAD"}));
  r->Add(OpSchema("group_norm_grad")
             .Input("X")
             .Input("Y", kOptional)
             .Input("Scale", kOptional)
             .Input("Bias", kOptional)
             .Input("Mean")
             .Input("Variance")
             .Input("Y@GRAD")
             .Output("X@GRAD", kOptional)
             .Output("Scale@GRAD", kOptional)
             .Output("Bias@GRAD", kOptional)
             .Attr("epsilon", 1e-5f)
             .Attr("groups", 1)
             .Attr("data_layout", std::string("NCHW"))
             .InferShape(InferGroupNormGrad));
  r->Add(OpSchema("instance_norm")
             .Input("X")
             .Input("Scale", kOptional)
             .Input("Bias", kOptional)
             .Output("Y")
             .Output("SavedMean", kOptional)
             .Output("SavedVariance", kOptional)
             .Attr("epsilon", 1e-5f)
             .InferShape(InferGroupNorm)
             .Grad("instance_norm_grad",
                   {"X", "Scale", "SavedMean", "SavedVariance", "Y@GRAD"},
                   {"X@GRAD", "Scale@GRAD", "Bias@GRAD"}));
  r->Add(OpSchema("instance_norm_grad")
             .Input("X")
             .Input("Scale", kOptional)
             .Input("SavedMean")
             .Input("SavedVariance")
             .Input("Y@GRAD")
             .Output("X@GRAD", kOptional)
             .Output("Scale@GRAD", kOptional)
             .Output("Bias@GRAD", kOptional)
             .Attr("epsilon", 1e-5f)
             .InferShape(InferGroupNormGrad));
}

}  // namespace parex
