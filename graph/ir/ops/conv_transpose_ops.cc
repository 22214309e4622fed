// conv2d_transpose and its gradient op (Paddle 2.6's slots and attributes):
// Input [N, C, H, W], Filter [C, M / groups, kh, kw] -> Output [N, M, oh, ow],
// the adjoint of conv2d with the same geometry: each input element scatters
// its filter window into the output. Per spatial dim, with the paddings
// resolved from the *input* extent as conv2d's (window_spec.h: SAME,
// VALID, EXPLICIT) and k' = dilation * (k - 1) + 1:
//   infer = (in - 1) * stride - pad_before - pad_after + k';
//   out = output_size[i] when given (infer <= it < infer + stride), else
//         infer + output_padding[i] (0 <= it < max(stride, dilation)).
// The gradient op takes Input, Filter, Bias and Output@GRAD, as Paddle 2.6
// records it; the Bias input (oneDNN's fused form) is refused.
#include <algorithm>
#include <string>
#include <vector>

#include "graph/ir/ops/op_groups.h"
#include "graph/ir/spec/channels_last.h"
#include "graph/ir/spec/window_spec.h"

namespace parex {
namespace {

// An attribute of no entries or one per spatial dim.
StatusOr<std::vector<int>> OptionalPerDim(const ShapeContext& ctx,
                                          const std::string& name, int rank) {
  std::vector<int> v = ctx.Attr<std::vector<int>>(name);
  if (!v.empty() && static_cast<int>(v.size()) != rank) {
    return ctx.Error(name + " must be empty or have " + std::to_string(rank) +
                     " entries, got " + IntsToString(v));
  }
  return v;
}

// Input and Filter of rank `rank` + 2 that agree on the input channels,
// those divisible by groups >= 1; the output channels (-1 when unknown).
StatusOr<int64_t> OutputChannels(const ShapeContext& ctx, const Dims& in,
                                 const Dims& filter, int rank) {
  if (static_cast<int>(in.size()) != rank + 2 ||
      static_cast<int>(filter.size()) != rank + 2) {
    return ctx.Error("Input " + DimsToString(in) + " and Filter " +
                     DimsToString(filter) + " must have rank " +
                     std::to_string(rank + 2));
  }
  const int groups = ctx.Attr<int>("groups");
  if (groups < 1) {
    return ctx.Error("groups must be >= 1, got " + std::to_string(groups));
  }
  if (!ExtentsAgree(in[1], filter[0])) {
    return ctx.Error("Input has " + std::to_string(in[1]) +
                     " channels, Filter " + DimsToString(filter) + " expects " +
                     std::to_string(filter[0]));
  }
  if (filter[0] >= 0 && filter[0] % groups != 0) {
    return ctx.Error(
        "Filter " + DimsToString(filter) + " has " + std::to_string(filter[0]) +
        " input channels, not divisible by groups " + std::to_string(groups));
  }
  int64_t channels = -1;
  if (filter[1] >= 0 && !CheckedMul(filter[1], int64_t{groups}, &channels)) {
    return ctx.Error("Filter " + DimsToString(filter) + " with " +
                     std::to_string(groups) + " groups overflows");
  }
  return channels;
}

// Spatial dim i's extent inferred from the window (no overflow, above 0).
StatusOr<int64_t> InferredExtent(const ShapeContext& ctx, const WindowSpec& w,
                                 int i, const Dims& in, const Dims& filter) {
  int64_t infer = 0;
  if (!CheckedMul(w.in[i] - 1, int64_t{w.strides[i]}, &infer) ||
      infer > kMaxNumel || w.dilations[i] > kMaxNumel / (w.size[i] + 1)) {
    return ctx.Error("the output of Input " + DimsToString(in) +
                     " with strides " + IntsToString(w.strides) +
                     " is too large");
  }
  infer += int64_t{w.dilations[i]} * (w.size[i] - 1) + 1 - w.paddings[2 * i] -
           w.paddings[2 * i + 1];
  if (infer <= 0) {
    return ctx.Error("paddings " + IntsToString(w.paddings) +
                     " leave no output of Input " + DimsToString(in) +
                     " and Filter " + DimsToString(filter));
  }
  return infer;
}

// Dim i's extent: output_size's when given (infer <= it < infer + stride),
// else infer + output_padding (0 <= it < max(stride, dilation)).
StatusOr<int64_t> OutputExtent(const ShapeContext& ctx, const WindowSpec& w,
                               int i, int64_t infer,
                               const std::vector<int>& output_size,
                               const std::vector<int>& output_padding) {
  if (!output_size.empty()) {
    if (output_size[i] < infer || output_size[i] >= infer + w.strides[i]) {
      return ctx.Error("output_size " + IntsToString(output_size) +
                       " must lie in [" + std::to_string(infer) + ", " +
                       std::to_string(infer + w.strides[i]) + ") in dim " +
                       std::to_string(i));
    }
    return output_size[i];
  }
  if (output_padding.empty()) return infer;
  const int limit = std::max(w.strides[i], w.dilations[i]);
  if (output_padding[i] < 0 || output_padding[i] >= limit) {
    return ctx.Error("output_padding " + IntsToString(output_padding) +
                     " must lie in [0, " + std::to_string(limit) + ") in dim " +
                     std::to_string(i));
  }
  return infer + output_padding[i];
}

StatusOr<Dims> ConvTransposeOutDims(const ShapeContext& ctx, int rank) {
  PAREX_RETURN_IF_ERROR(
      CheckChannelsFirst(ctx, "data_format", rank == 2 ? "NCHW" : "NCDHW"));
  const Dims in = ctx.InputDims("Input");
  const Dims filter = ctx.InputDims("Filter");
  PAREX_ASSIGN_OR_RETURN(int64_t channels,
                         OutputChannels(ctx, in, filter, rank));
  WindowSpec w;
  w.rank = rank;
  for (int i = 0; i < rank; ++i) {
    w.in[i] = in[2 + i];
    w.size[i] = filter[2 + i];
  }
  PAREX_ASSIGN_OR_RETURN(w.strides, PositiveIntsAttr(ctx, "strides", rank));
  PAREX_ASSIGN_OR_RETURN(w.dilations, PositiveIntsAttr(ctx, "dilations", rank));
  PAREX_RETURN_IF_ERROR(ResolvePaddings(ctx, &w));
  PAREX_ASSIGN_OR_RETURN(std::vector<int> output_size,
                         OptionalPerDim(ctx, "output_size", rank));
  PAREX_ASSIGN_OR_RETURN(std::vector<int> output_padding,
                         OptionalPerDim(ctx, "output_padding", rank));
  Dims out{in[0], channels};
  for (int i = 0; i < rank; ++i) {
    if (w.in[i] < 0 || w.size[i] < 0) {
      out.push_back(output_size.empty() ? -1 : output_size[i]);
      continue;
    }
    PAREX_ASSIGN_OR_RETURN(int64_t infer,
                           InferredExtent(ctx, w, i, in, filter));
    PAREX_ASSIGN_OR_RETURN(
        int64_t extent,
        OutputExtent(ctx, w, i, infer, output_size, output_padding));
    out.push_back(extent);
  }
  return out;
}

Status CheckNoBias(const ShapeContext& ctx) {
  if (!ctx.HasInput("Bias")) return Status::Ok();
  return Unimplemented(ctx.op().Label() +
                       ": input 'Bias' is not supported (add it after)");
}

template <int kRank>
Status InferConvTranspose(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckNoBias(ctx));
  PAREX_RETURN_IF_ERROR(ctx.CheckSameDType({"Input", "Filter"}));
  ctx.SetOutputDType("Output", 0, ctx.InputDType("Input"));
  if (ctx.IsUnknown(ctx.InputDims("Input")) ||
      ctx.IsUnknown(ctx.InputDims("Filter"))) {
    return Status::Ok();
  }
  PAREX_ASSIGN_OR_RETURN(Dims out, ConvTransposeOutDims(ctx, kRank));
  ctx.SetOutputDims("Output", 0, out);
  return Status::Ok();
}

template <int kRank>
Status InferConvTransposeGrad(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckNoBias(ctx));
  PAREX_RETURN_IF_ERROR(ctx.CheckSameDType({"Input", "Filter", "Output@GRAD"}));
  if (!ctx.IsUnknown(ctx.InputDims("Input")) &&
      !ctx.IsUnknown(ctx.InputDims("Filter"))) {
    PAREX_ASSIGN_OR_RETURN(Dims out, ConvTransposeOutDims(ctx, kRank));
    PAREX_RETURN_IF_ERROR(ctx.CheckGradDims("Output@GRAD", out));
  }
  return InferGradShapesFromForwardInputs(ctx);
}

template <int kRank>
void AddConvTranspose(OpSchemaRegistry* r, const std::string& type) {
  const std::vector<int> ones(kRank, 1), zeros(kRank, 0);
  for (bool grad : {false, true}) {
    OpSchema s(grad ? type + "_grad" : type);
    s.Input("Input").Input("Filter").Input("Bias", kOptional);
    if (grad) {
      s.Input("Output@GRAD")
          .Output("Input@GRAD", kOptional)
          .Output("Filter@GRAD", kOptional)
          .InferShape(WithChannelsLast(InferConvTransposeGrad<kRank>));
    } else {
      s.Output("Output")
          .InferShape(WithChannelsLast(InferConvTranspose<kRank>))
          .Grad(type + "_grad", {"Input", "Filter", "Bias", "Output@GRAD"},
                {"Input@GRAD", "Filter@GRAD"});
    }
    s.Attr("strides", ones)
        .Attr("paddings", zeros)
        .Attr("dilations", ones)
        .Attr("output_size", std::vector<int>{})
        .Attr("output_padding", std::vector<int>{})
        .Attr("groups", 1)
        .Attr("padding_algorithm", std::string("EXPLICIT"))
        .Attr("data_format", std::string(kRank == 2 ? "NCHW" : "NCDHW"));
    r->Add(std::move(s));
  }
}

}  // namespace

void RegisterConvTransposeOps(OpSchemaRegistry* r) {
  AddConvTranspose<2>(r, "conv2d_transpose");
}

}  // namespace parex
