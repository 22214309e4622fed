// conv2d and pool2d over NCHW tensors, with their gradient ops (Fluid's
// slots and attributes). depthwise_conv2d is conv2d under another name
// (Input, Filter -> Output, conv2d's attributes and rules; Paddle 2.6's CPU
// kernel is its grouped convolution, so groups need not equal the channels
// there either); its gradient op takes Input, Filter and Output@GRAD.
//
// Window geometry, per spatial dim (Paddle's UpdatePadding[AndDilation] and
// ConvOutputSize / PoolOutputSize):
//   paddings: 2 entries {h, w} (each used before and after) or 4 entries
//     {top, bottom, left, right};
//   padding_algorithm "SAME": out = ceil(in / stride), the padding sum
//     max((out-1)*stride + window - in, 0) split with the smaller half
//     first, dilation 1; "VALID": no padding; "EXPLICIT": as given;
//   conv: out = (in + pad0 + pad1 - (dilation*(k-1)+1)) / stride + 1;
//   pool: out = (in + pad0 + pad1 - k) / stride + 1, rounding up with
//     ceil_mode; global_pooling pools the whole plane (no padding);
//     adaptive pooling has out = ksize.
// kernels/cpu/im2col.h repeats the padding resolution for the kernels.
#include <climits>
#include <string>
#include <vector>

#include "graph/ir/ops/op_groups.h"

namespace parex {
namespace {

std::string ListToString(const std::vector<int>& v) {
  Dims d(v.begin(), v.end());
  return DimsToString(d);
}

// An attribute of two positive ints ({h, w}).
StatusOr<std::vector<int>> PairAttr(const ShapeContext& ctx,
                                    const std::string& name) {
  std::vector<int> v = ctx.Attr<std::vector<int>>(name);
  if (v.size() != 2 || v[0] <= 0 || v[1] <= 0) {
    return ctx.Error(name + " must be two positive ints, got " +
                     ListToString(v));
  }
  return v;
}

Status CheckNchw(const ShapeContext& ctx) {
  const std::string format = ctx.Attr<std::string>("data_format");
  if (format == "NCHW" || format == "AnyLayout") return Status::Ok();
  return Unimplemented(ctx.op().Label() + ": data_format '" + format +
                       "' (only NCHW is supported)");
}

// The spatial geometry of one window op, per dim (0: h, 1: w).
struct Window {
  int64_t in[2];
  int64_t size[2];  // kernel / pool window, undilated
  std::vector<int> strides;
  std::vector<int> dilations{1, 1};
  std::vector<int> paddings;  // {top, bottom, left, right}
};

// Expands and resolves w->paddings under the padding_algorithm attribute.
Status ResolvePaddings(const ShapeContext& ctx, Window* w) {
  std::vector<int> p = ctx.Attr<std::vector<int>>("paddings");
  if (p.size() == 2) {
    p = {p[0], p[0], p[1], p[1]};
  } else if (p.size() != 4) {
    return ctx.Error("paddings must have 2 or 4 entries, got " +
                     ListToString(p));
  }
  for (int v : p) {
    if (v < 0) return ctx.Error("negative paddings " + ListToString(p));
  }
  const std::string algorithm = ctx.Attr<std::string>("padding_algorithm");
  if (algorithm == "SAME") {
    for (int i = 0; i < 2; ++i) {
      w->dilations[i] = 1;
      if (w->in[i] < 0) continue;  // unknown extent: unknown output anyway
      const int64_t out = (w->in[i] + w->strides[i] - 1) / w->strides[i];
      const int64_t sum = std::max<int64_t>(
          (out - 1) * w->strides[i] + w->size[i] - w->in[i], 0);
      if (sum > INT_MAX) {
        return ctx.Error("SAME padding of " + std::to_string(sum) +
                         " exceeds the int range of paddings");
      }
      p[2 * i] = static_cast<int>(sum / 2);
      p[2 * i + 1] = static_cast<int>(sum - sum / 2);
    }
  } else if (algorithm == "VALID") {
    p = {0, 0, 0, 0};
  } else if (algorithm != "EXPLICIT") {
    return ctx.Error("unknown padding_algorithm '" + algorithm + "'");
  }
  w->paddings = p;
  return Status::Ok();
}

// Output extent of dim i; -1 when the input extent is unknown.
StatusOr<int64_t> OutExtent(const ShapeContext& ctx, const Window& w, int i,
                            bool ceil_mode) {
  if (w.in[i] < 0 || w.size[i] < 0) return int64_t{-1};
  int64_t span = 0;
  if (!CheckedMul(int64_t{w.dilations[i]}, w.size[i] - 1, &span) ||
      span > kMaxNumel) {
    return ctx.Error("dilation " + std::to_string(w.dilations[i]) +
                     " of a window of " + std::to_string(w.size[i]) +
                     " spans more than 2^48");
  }
  span += 1;
  const int64_t room = w.in[i] + w.paddings[2 * i] + w.paddings[2 * i + 1];
  const int64_t stride = w.strides[i];
  const int64_t out =
      room < span ? 0
                  : (room - span + (ceil_mode ? stride - 1 : 0)) / stride + 1;
  if (out <= 0) {
    return ctx.Error(std::string(i == 0 ? "height" : "width") + " " +
                     std::to_string(w.in[i]) + " with paddings " +
                     ListToString(w.paddings) + " is smaller than the window " +
                     std::to_string(span));
  }
  return out;
}

// ---- conv2d -----------------------------------------------------------------

StatusOr<Dims> Conv2dOutDims(const ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckNchw(ctx));
  const Dims in = ctx.InputDims("Input");
  const Dims filter = ctx.InputDims("Filter");
  if (in.size() != 4 || filter.size() != 4) {
    return ctx.Error("Input " + DimsToString(in) + " and Filter " +
                     DimsToString(filter) + " must have rank 4 (NCHW, MCHW)");
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
  Window w{{in[2], in[3]}, {filter[2], filter[3]}, {}, {}, {}};
  PAREX_ASSIGN_OR_RETURN(w.strides, PairAttr(ctx, "strides"));
  PAREX_ASSIGN_OR_RETURN(w.dilations, PairAttr(ctx, "dilations"));
  PAREX_RETURN_IF_ERROR(ResolvePaddings(ctx, &w));
  PAREX_ASSIGN_OR_RETURN(int64_t oh, OutExtent(ctx, w, 0, false));
  PAREX_ASSIGN_OR_RETURN(int64_t ow, OutExtent(ctx, w, 1, false));
  return Dims{in[0], filter[0], oh, ow};
}

Status InferConv2d(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(
      ctx.CheckSameDType({"Input", "Filter", "Bias", "ResidualData"}));
  ctx.SetOutputDType("Output", 0, ctx.InputDType("Input"));
  if (ctx.IsUnknown(ctx.InputDims("Input")) ||
      ctx.IsUnknown(ctx.InputDims("Filter"))) {
    return Status::Ok();
  }
  PAREX_ASSIGN_OR_RETURN(Dims out, Conv2dOutDims(ctx));
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

Status InferConv2dGrad(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(
      ctx.CheckSameDType({"Input", "Filter", "Output@GRAD"}));
  if (!ctx.IsUnknown(ctx.InputDims("Input")) &&
      !ctx.IsUnknown(ctx.InputDims("Filter"))) {
    PAREX_ASSIGN_OR_RETURN(Dims out, Conv2dOutDims(ctx));
    PAREX_RETURN_IF_ERROR(ctx.CheckGradDims("Output@GRAD", out));
  }
  return InferGradShapesFromForwardInputs(ctx);
}

// ---- pool2d -----------------------------------------------------------------

StatusOr<Dims> Pool2dOutDims(const ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckNchw(ctx));
  const Dims x = ctx.InputDims("X");
  if (x.size() != 4) {
    return ctx.Error("X " + DimsToString(x) + " must have rank 4 (NCHW)");
  }
  const std::string type = ctx.Attr<std::string>("pooling_type");
  if (type != "max" && type != "avg") {
    return ctx.Error("pooling_type must be 'max' or 'avg', got '" + type + "'");
  }
  PAREX_ASSIGN_OR_RETURN(std::vector<int> ksize, PairAttr(ctx, "ksize"));
  if (ctx.Attr<bool>("adaptive")) {
    return Dims{x[0], x[1], ksize[0], ksize[1]};
  }
  if (ctx.Attr<bool>("global_pooling")) return Dims{x[0], x[1], 1, 1};
  Window w{{x[2], x[3]}, {ksize[0], ksize[1]}, {}, {1, 1}, {}};
  PAREX_ASSIGN_OR_RETURN(w.strides, PairAttr(ctx, "strides"));
  PAREX_RETURN_IF_ERROR(ResolvePaddings(ctx, &w));
  const bool ceil_mode = ctx.Attr<bool>("ceil_mode");
  PAREX_ASSIGN_OR_RETURN(int64_t oh, OutExtent(ctx, w, 0, ceil_mode));
  PAREX_ASSIGN_OR_RETURN(int64_t ow, OutExtent(ctx, w, 1, ceil_mode));
  return Dims{x[0], x[1], oh, ow};
}

Status InferPool2d(ShapeContext& ctx) {
  ctx.SetOutputDType("Out", 0, ctx.InputDType("X"));
  if (ctx.IsUnknown(ctx.InputDims("X"))) return Status::Ok();
  PAREX_ASSIGN_OR_RETURN(Dims out, Pool2dOutDims(ctx));
  ctx.SetOutputDims("Out", 0, out);
  return Status::Ok();
}

Status InferPool2dGrad(ShapeContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckSameDType({"X", "Out", "Out@GRAD"}));
  if (!ctx.IsUnknown(ctx.InputDims("X"))) {
    PAREX_ASSIGN_OR_RETURN(Dims out, Pool2dOutDims(ctx));
    PAREX_RETURN_IF_ERROR(ctx.CheckGradDims("Out", out));
    PAREX_RETURN_IF_ERROR(ctx.CheckGradDims("Out@GRAD", out));
  }
  return InferGradShapesFromForwardInputs(ctx);
}

// Attributes shared by an op and its gradient op.
OpSchema& ConvAttrs(OpSchema& s) {
  return s.Attr("strides", std::vector<int>{1, 1})
      .Attr("paddings", std::vector<int>{0, 0})
      .Attr("dilations", std::vector<int>{1, 1})
      .Attr("groups", 1)
      .Attr("padding_algorithm", std::string("EXPLICIT"))
      .Attr("data_format", std::string("NCHW"));
}

OpSchema& PoolAttrs(OpSchema& s) {
  return s.Attr("pooling_type", std::string("max"))
      .RequiredAttr("ksize", proto::INTS)
      .Attr("strides", std::vector<int>{1, 1})
      .Attr("paddings", std::vector<int>{0, 0})
      .Attr("global_pooling", false)
      .Attr("exclusive", true)
      .Attr("ceil_mode", false)
      .Attr("adaptive", false)
      .Attr("padding_algorithm", std::string("EXPLICIT"))
      .Attr("data_format", std::string("NCHW"));
}

}  // namespace

void RegisterConvOps(OpSchemaRegistry* r) {
  OpSchema conv("conv2d");
  conv.Input("Input")
      .Input("Filter")
      .Input("Bias", kOptional)
      .Input("ResidualData", kOptional)
      .Output("Output")
      .InferShape(InferConv2d)
      .Grad("conv2d_grad", {"Input", "Filter", "Output@GRAD"},
            {"Input@GRAD", "Filter@GRAD"});
  r->Add(ConvAttrs(conv));

  OpSchema conv_grad("conv2d_grad");
  conv_grad.Input("Input")
      .Input("Filter")
      .Input("Bias", kOptional)
      .Input("Output@GRAD")
      .Output("Input@GRAD", kOptional)
      .Output("Filter@GRAD", kOptional)
      .Output("Bias@GRAD", kOptional)
      .InferShape(InferConv2dGrad);
  r->Add(ConvAttrs(conv_grad));

  OpSchema depthwise("depthwise_conv2d");
  depthwise.Input("Input")
      .Input("Filter")
      .Output("Output")
      .InferShape(InferConv2d)
      .Grad("depthwise_conv2d_grad", {"Input", "Filter", "Output@GRAD"},
            {"Input@GRAD", "Filter@GRAD"});
  r->Add(ConvAttrs(depthwise));

  OpSchema depthwise_grad("depthwise_conv2d_grad");
  depthwise_grad.Input("Input")
      .Input("Filter")
      .Input("Output@GRAD")
      .Output("Input@GRAD", kOptional)
      .Output("Filter@GRAD", kOptional)
      .InferShape(InferConv2dGrad);
  r->Add(ConvAttrs(depthwise_grad));

  OpSchema pool("pool2d");
  pool.Input("X")
      .Output("Out")
      .InferShape(InferPool2d)
      .Grad("pool2d_grad", {"X", "Out", "Out@GRAD"}, {"X@GRAD"});
  r->Add(PoolAttrs(pool));

  OpSchema pool_grad("pool2d_grad");
  pool_grad.Input("X")
      .Input("Out")
      .Input("Out@GRAD")
      .Output("X@GRAD", kOptional)
      .InferShape(InferPool2dGrad);
  r->Add(PoolAttrs(pool_grad));
}

}  // namespace parex
