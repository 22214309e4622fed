// conv2d and pool2d over NCHW tensors, conv3d and pool3d over NCDHW, with
// their gradient ops (Fluid's slots and attributes; the 3-D ops' as the 2-D
// ones' with three entries per list and 3 or 6 paddings; conv3d has no Bias
// or ResidualData slot). depthwise_conv2d is conv2d under another name
// (Input, Filter -> Output, conv2d's attributes and rules; Paddle 2.6's CPU
// kernel is its grouped convolution, so groups need not equal the channels
// there either); its gradient op takes Input, Filter and Output@GRAD.
//
// Window geometry: graph/ir/spec/window_spec.h; global_pooling pools the
// whole plane (no padding); adaptive pooling has out = ksize.
#include <string>
#include <utility>
#include <vector>

#include "graph/ir/ops/op_groups.h"
#include "graph/ir/spec/channels_last.h"
#include "graph/ir/spec/window_spec.h"

namespace parex {
namespace {

// ---- conv2d -----------------------------------------------------------------

// Output dims of a convolution with `rank` spatial dims.
StatusOr<Dims> ConvOutDims(const ShapeContext& ctx, int rank) {
  PAREX_RETURN_IF_ERROR(
      CheckChannelsFirst(ctx, "data_format", rank == 2 ? "NCHW" : "NCDHW"));
  const Dims in = ctx.InputDims("Input");
  const Dims filter = ctx.InputDims("Filter");
  if (static_cast<int>(in.size()) != rank + 2 ||
      static_cast<int>(filter.size()) != rank + 2) {
    return ctx.Error("Input " + DimsToString(in) + " and Filter " +
                     DimsToString(filter) + " must have rank " +
                     std::to_string(rank + 2) +
                     (rank == 2 ? " (NCHW, MCHW)" : " (NCDHW, MCDHW)"));
  }
  const int groups = ctx.Attr<int>("groups");
  if (groups < 1) {
    return ctx.Error("groups must be >= 1, got " + std::to_string(groups));
  }
  int64_t want_c = -1;
  if (filter[1] >= 0 && !CheckedMul(filter[1], int64_t{groups}, &want_c)) {
    return ctx.Error("Filter " + DimsToString(filter) + " with " +
                     std::to_string(groups) + " groups overflows");
  }
  if (!ExtentsAgree(in[1], want_c)) {
    return ctx.Error("Input has " + std::to_string(in[1]) +
                     " channels, Filter " + DimsToString(filter) + " with " +
                     std::to_string(groups) + " groups expects " +
                     std::to_string(want_c));
  }
  if (filter[0] >= 0 && filter[0] % groups != 0) {
    return ctx.Error(
        "Filter " + DimsToString(filter) + " has " + std::to_string(filter[0]) +
        " output channels, not divisible by groups " + std::to_string(groups));
  }
  WindowSpec w;
  w.rank = rank;
  for (int i = 0; i < rank; ++i) {
    w.in[i] = in[2 + i];
    w.size[i] = filter[2 + i];
  }
  PAREX_ASSIGN_OR_RETURN(w.strides, PositiveIntsAttr(ctx, "strides", rank));
  PAREX_ASSIGN_OR_RETURN(w.dilations, PositiveIntsAttr(ctx, "dilations", rank));
  PAREX_RETURN_IF_ERROR(ResolvePaddings(ctx, &w));
  Dims out{in[0], filter[0]};
  for (int i = 0; i < rank; ++i) {
    PAREX_ASSIGN_OR_RETURN(int64_t extent, OutExtent(ctx, w, i, false));
    out.push_back(extent);
  }
  return out;
}

template <int kRank>
Status InferConv(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(
      ctx.CheckSameDType({"Input", "Filter", "Bias", "ResidualData"}));
  ctx.SetOutputDType("Output", 0, ctx.InputDType("Input"));
  if (ctx.IsUnknown(ctx.InputDims("Input")) ||
      ctx.IsUnknown(ctx.InputDims("Filter"))) {
    return Status::Ok();
  }
  PAREX_ASSIGN_OR_RETURN(Dims out, ConvOutDims(ctx, kRank));
  if (ctx.HasInput("Bias") && !ctx.IsUnknown(ctx.InputDims("Bias"))) {
    const int64_t n = Numel(ctx.InputDims("Bias"));
    if (!ExtentsAgree(n, out[1])) {
      return ctx.Error("Bias " + DimsToString(ctx.InputDims("Bias")) +
                       " does not have one value per output channel (" +
                       std::to_string(out[1]) + ")");
    }
  }
  if (ctx.HasInput("ResidualData")) {
    PAREX_RETURN_IF_ERROR(ctx.CheckGradDims("ResidualData", out));
  }
  ctx.SetOutputDims("Output", 0, out);
  return Status::Ok();
}

template <int kRank>
Status InferConvGrad(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckSameDType({"Input", "Filter", "Output@GRAD"}));
  if (!ctx.IsUnknown(ctx.InputDims("Input")) &&
      !ctx.IsUnknown(ctx.InputDims("Filter"))) {
    PAREX_ASSIGN_OR_RETURN(Dims out, ConvOutDims(ctx, kRank));
    PAREX_RETURN_IF_ERROR(ctx.CheckGradDims("Output@GRAD", out));
  }
  return InferGradShapesFromForwardInputs(ctx);
}

// ---- pool2d -----------------------------------------------------------------

// Output dims of a pooling with `rank` spatial dims.
StatusOr<Dims> PoolOutDims(const ShapeContext& ctx, int rank) {
  PAREX_RETURN_IF_ERROR(
      CheckChannelsFirst(ctx, "data_format", rank == 2 ? "NCHW" : "NCDHW"));
  const Dims x = ctx.InputDims("X");
  if (static_cast<int>(x.size()) != rank + 2) {
    return ctx.Error("X " + DimsToString(x) + " must have rank " +
                     std::to_string(rank + 2) +
                     (rank == 2 ? " (NCHW)" : " (NCDHW)"));
  }
  const std::string type = ctx.Attr<std::string>("pooling_type");
  if (type != "max" && type != "avg") {
    return ctx.Error("pooling_type must be 'max' or 'avg', got '" + type + "'");
  }
  PAREX_ASSIGN_OR_RETURN(std::vector<int> ksize,
                         PositiveIntsAttr(ctx, "ksize", rank));
  Dims out{x[0], x[1]};
  if (ctx.Attr<bool>("adaptive")) {
    out.insert(out.end(), ksize.begin(), ksize.end());
    return out;
  }
  if (ctx.Attr<bool>("global_pooling")) {
    out.resize(rank + 2, 1);
    return out;
  }
  WindowSpec w;
  w.rank = rank;
  for (int i = 0; i < rank; ++i) {
    w.in[i] = x[2 + i];
    w.size[i] = ksize[i];
  }
  w.dilations.assign(rank, 1);
  PAREX_ASSIGN_OR_RETURN(w.strides, PositiveIntsAttr(ctx, "strides", rank));
  PAREX_RETURN_IF_ERROR(ResolvePaddings(ctx, &w));
  const bool ceil_mode = ctx.Attr<bool>("ceil_mode");
  for (int i = 0; i < rank; ++i) {
    PAREX_ASSIGN_OR_RETURN(int64_t extent, OutExtent(ctx, w, i, ceil_mode));
    out.push_back(extent);
  }
  return out;
}

template <int kRank>
Status InferPool(ShapeContext& ctx) {
  ctx.SetOutputDType("Out", 0, ctx.InputDType("X"));
  if (ctx.IsUnknown(ctx.InputDims("X"))) return Status::Ok();
  PAREX_ASSIGN_OR_RETURN(Dims out, PoolOutDims(ctx, kRank));
  ctx.SetOutputDims("Out", 0, out);
  return Status::Ok();
}

template <int kRank>
Status InferPoolGrad(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckSameDType({"X", "Out", "Out@GRAD"}));
  if (!ctx.IsUnknown(ctx.InputDims("X"))) {
    PAREX_ASSIGN_OR_RETURN(Dims out, PoolOutDims(ctx, kRank));
    PAREX_RETURN_IF_ERROR(ctx.CheckGradDims("Out", out));
    PAREX_RETURN_IF_ERROR(ctx.CheckGradDims("Out@GRAD", out));
  }
  return InferGradShapesFromForwardInputs(ctx);
}

// Attributes shared by an op and its gradient op.
OpSchema& ConvAttrs(OpSchema& s, int rank = 2) {
  return s.Attr("strides", std::vector<int>(rank, 1))
      .Attr("paddings", std::vector<int>(rank, 0))
      .Attr("dilations", std::vector<int>(rank, 1))
      .Attr("groups", 1)
      .Attr("padding_algorithm", std::string("EXPLICIT"))
      .Attr("data_format", std::string(rank == 2 ? "NCHW" : "NCDHW"));
}

// `type` and `type`_grad: Input, Filter -> Output, and the gradient op
// Input, Filter, Output@GRAD -> Input@GRAD, Filter@GRAD.
void AddConvWithoutBias(OpSchemaRegistry* r, const std::string& type,
                        InferShapeFn infer, InferShapeFn infer_grad, int rank) {
  OpSchema forward(type);
  forward.Input("Input")
      .Input("Filter")
      .Output("Output")
      .InferShape(WithChannelsLast(std::move(infer)))
      .Grad(type + "_grad", {"Input", "Filter", "Output@GRAD"},
            {"Input@GRAD", "Filter@GRAD"});
  r->Add(ConvAttrs(forward, rank));
  OpSchema grad(type + "_grad");
  grad.Input("Input")
      .Input("Filter")
      .Input("Output@GRAD")
      .Output("Input@GRAD", kOptional)
      .Output("Filter@GRAD", kOptional)
      .InferShape(WithChannelsLast(std::move(infer_grad)));
  r->Add(ConvAttrs(grad, rank));
}

OpSchema& PoolAttrs(OpSchema& s, int rank = 2) {
  return s.Attr("pooling_type", std::string("max"))
      .RequiredAttr("ksize", proto::INTS)
      .Attr("strides", std::vector<int>(rank, 1))
      .Attr("paddings", std::vector<int>(rank, 0))
      .Attr("global_pooling", false)
      .Attr("exclusive", true)
      .Attr("ceil_mode", false)
      .Attr("adaptive", false)
      .Attr("padding_algorithm", std::string("EXPLICIT"))
      .Attr("data_format", std::string(rank == 2 ? "NCHW" : "NCDHW"));
}

}  // namespace

void RegisterConvOps(OpSchemaRegistry* r) {
  OpSchema conv("conv2d");
  conv.Input("Input")
      .Input("Filter")
      .Input("Bias", kOptional)
      .Input("ResidualData", kOptional)
      .Output("Output")
      .InferShape(WithChannelsLast(InferConv<2>))
      .Grad("conv2d_grad", {"Input", "Filter", "Output@GRAD"},
            {"Input@GRAD", "Filter@GRAD"});
  // The activation of the fused form (graph/builder/inference_fusion.h):
  // "" (none), "relu", "relu6" (fuse_alpha: its threshold, 6 when 0),
  // "leaky_relu" (fuse_alpha: its slope below 0) or "hard_swish" (Paddle's
  // defaults: x * min(max(x + 3, 0), 6) / 6), applied after Bias and
  // ResidualData.
  conv.Attr("fuse_activation", std::string(""));
  conv.Attr("fuse_alpha", 0.0f);
  // Set by the inference fusions: Filter is a persistable no op writes, so
  // a kernel may keep what it derives from it (oneDNN's reordered copy).
  conv.Attr("constant_filter", false);
  r->Add(ConvAttrs(conv));

  OpSchema conv_grad("conv2d_grad");
  conv_grad.Input("Input")
      .Input("Filter")
      .Input("Bias", kOptional)
      .Input("Output@GRAD")
      .Output("Input@GRAD", kOptional)
      .Output("Filter@GRAD", kOptional)
      .Output("Bias@GRAD", kOptional)
      .InferShape(WithChannelsLast(InferConvGrad<2>));
  r->Add(ConvAttrs(conv_grad));

  // depthwise_conv2d (conv2d with groups, as Paddle's CPU kernel) and
  // conv3d: conv2d's slots without Bias.
  AddConvWithoutBias(r, "depthwise_conv2d", InferConv<2>, InferConvGrad<2>, 2);
  AddConvWithoutBias(r, "conv3d", InferConv<3>, InferConvGrad<3>, 3);

  OpSchema pool("pool2d");
  pool.Input("X")
      .Output("Out")
      .InferShape(WithChannelsLast(InferPool<2>))
      .Grad("pool2d_grad", {"X", "Out", "Out@GRAD"}, {"X@GRAD"});
  r->Add(PoolAttrs(pool));

  OpSchema pool_grad("pool2d_grad");
  pool_grad.Input("X")
      .Input("Out")
      .Input("Out@GRAD")
      .Output("X@GRAD", kOptional)
      .InferShape(WithChannelsLast(InferPoolGrad<2>));
  r->Add(PoolAttrs(pool_grad));

  OpSchema pool3d("pool3d");
  pool3d.Input("X")
      .Output("Out")
      .InferShape(WithChannelsLast(InferPool<3>))
      .Grad("pool3d_grad", {"X", "Out", "Out@GRAD"}, {"X@GRAD"});
  r->Add(PoolAttrs(pool3d, 3));

  OpSchema pool3d_grad("pool3d_grad");
  pool3d_grad.Input("X")
      .Input("Out")
      .Input("Out@GRAD")
      .Output("X@GRAD", kOptional)
      .InferShape(WithChannelsLast(InferPoolGrad<3>));
  r->Add(PoolAttrs(pool3d_grad, 3));
}

}  // namespace parex
