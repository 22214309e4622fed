// Ops that move elements without arithmetic, with Paddle 2.6's slots and
// attributes: tile (repeat_times as an attribute or tensors: the shape then
// comes from values), flip (its gradient in Paddle's programs is a flip op),
// roll (shifts along axes, or over the flattened tensor when axis is
// empty) and index_select, with the gradient ops Paddle records.
#include <algorithm>
#include <string>
#include <vector>

#include "graph/ir/ops/op_groups.h"
#include "graph/ir/spec/channels_last.h"
#include "graph/ir/spec/strided_slice_spec.h"

namespace parex {
namespace {

// `axis` of a tensor of rank `rank`, from -rank to rank - 1.
StatusOr<int> AxisOf(const ShapeContext& ctx, int64_t axis, int rank,
                     const std::string& what) {
  if (axis < -rank || axis >= rank) {
    return ctx.Error(what + " " + std::to_string(axis) +
                     " is out of range for X of rank " + std::to_string(rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// tile's repeat counts: RepeatTimes (a tensor), else repeat_times_tensor (one
// value per tensor), else the attribute; values are read at run time.
StatusOr<std::vector<int64_t>> RepeatTimes(const ShapeContext& ctx) {
  std::vector<int64_t> times;
  if (ctx.HasInput("RepeatTimes")) {
    PAREX_ASSIGN_OR_RETURN(std::vector<double> v,
                           ctx.InputValues("RepeatTimes"));
    times.assign(v.begin(), v.end());
  } else if (ctx.HasInput("repeat_times_tensor")) {
    for (int i = 0; i < ctx.InputCount("repeat_times_tensor"); ++i) {
      PAREX_ASSIGN_OR_RETURN(std::vector<double> v,
                             ctx.InputValues("repeat_times_tensor", i));
      if (v.size() != 1) {
        return ctx.Error("repeat_times_tensor " + std::to_string(i) +
                         " must hold one value");
      }
      times.push_back(static_cast<int64_t>(v[0]));
    }
  } else {
    const std::vector<int> attr = ctx.Attr<std::vector<int>>("repeat_times");
    times.assign(attr.begin(), attr.end());
  }
  for (int64_t t : times) {
    if (t <= 0 || t > (int64_t{1} << 31)) {
      return ctx.Error("repeat count " + std::to_string(t) +
                       " is not in [1, 2^31]");
    }
  }
  if (times.size() > 9) return ctx.Error("more than 9 repeat counts");
  return times;
}

Status InferTile(ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  const bool from_values =
      ctx.HasInput("RepeatTimes") || ctx.HasInput("repeat_times_tensor");
  if (!Known(ctx, x) || (from_values && !ctx.IsRuntime())) {
    ctx.SetOutput("Out", {}, ctx.InputDType("X"));
    return Status::Ok();
  }
  PAREX_ASSIGN_OR_RETURN(std::vector<int64_t> times, RepeatTimes(ctx));
  const size_t rank = std::max(x.size(), times.size());
  Dims out(rank);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t xe = d + x.size() < rank ? 1 : x[d + x.size() - rank];
    const int64_t t =
        d + times.size() < rank ? 1 : times[d + times.size() - rank];
    out[d] = xe < 0 ? -1 : xe * t;
  }
  ctx.SetOutput("Out", out, ctx.InputDType("X"));
  return Status::Ok();
}

Status InferFlip(ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  if (Known(ctx, x)) {
    for (int a : ctx.Attr<std::vector<int>>("axis")) {
      PAREX_RETURN_IF_ERROR(
          AxisOf(ctx, a, static_cast<int>(x.size()), "axis").status());
    }
  }
  ctx.ShareDimsAndDType("X", "Out");
  return Status::Ok();
}

Status InferRoll(ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  const std::vector<int64_t> shifts = ctx.Attr<std::vector<int64_t>>("shifts");
  const std::vector<int64_t> axis = ctx.Attr<std::vector<int64_t>>("axis");
  if (!axis.empty() && axis.size() != shifts.size()) {
    return ctx.Error(std::to_string(shifts.size()) + " shifts for " +
                     std::to_string(axis.size()) + " axes");
  }
  if (axis.empty() && shifts.size() != 1 && !ctx.HasInput("ShiftsTensor")) {
    return ctx.Error("a flattened roll takes one shift");
  }
  if (Known(ctx, x)) {
    for (int64_t a : axis) {
      PAREX_RETURN_IF_ERROR(
          AxisOf(ctx, a, static_cast<int>(x.size()), "axis").status());
    }
  }
  ctx.ShareDimsAndDType("X", "Out");
  return Status::Ok();
}

Status InferIndexSelect(ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  const Dims index = ctx.InputDims("Index");
  const DType idtype = ctx.InputDType("Index");
  if (idtype != DType::kInt32 && idtype != DType::kInt64 &&
      idtype != DType::kUndefined) {
    return ctx.Error(std::string("Index is ") + DTypeName(idtype) +
                     ", not int32 or int64");
  }
  if (!Known(ctx, x)) {
    ctx.SetOutput("Out", {}, ctx.InputDType("X"));
    return Status::Ok();
  }
  PAREX_ASSIGN_OR_RETURN(int dim, AxisOf(ctx, ctx.Attr<int>("dim"),
                                         static_cast<int>(x.size()), "dim"));
  if (Known(ctx, index) && index.size() != 1) {
    return ctx.Error("Index " + DimsToString(index) + " is not 1-D");
  }
  Dims out = x;
  out[dim] = Known(ctx, index) ? index[0] : -1;
  ctx.SetOutput("Out", out, ctx.InputDType("X"));
  return Status::Ok();
}

// The layout of pixel_shuffle and prelu: NHWC ops reach their shape rules
// as NCHW views (WithChannelsLast), so anything else is neither.
Status CheckNchwView(const ShapeContext& ctx) {
  const std::string format = ctx.Attr<std::string>("data_format");
  if (format == "NCHW") return Status::Ok();
  return ctx.Error("data_format '" + format + "' is neither NCHW nor NHWC");
}

// pixel_shuffle (NCHW; NHWC through channels_last.h): [N, C r^2, H, W] ->
// [N, C, H r, W r].
Status InferPixelShuffle(ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  const int r = ctx.Attr<int>("upscale_factor");
  PAREX_RETURN_IF_ERROR(CheckNchwView(ctx));
  if (r <= 0) return ctx.Error("upscale_factor must be positive");
  if (!Known(ctx, x)) {
    ctx.SetOutput("Out", {}, ctx.InputDType("X"));
    return Status::Ok();
  }
  if (x.size() != 4 || (x[1] >= 0 && x[1] % (int64_t{r} * r) != 0)) {
    return ctx.Error("X " + DimsToString(x) + " is not [N, C*" +
                     std::to_string(r * r) + ", H, W]");
  }
  auto times = [r](int64_t e) { return e < 0 ? e : e * r; };
  ctx.SetOutput(
      "Out", {x[0], x[1] < 0 ? -1 : x[1] / (r * r), times(x[2]), times(x[3])},
      ctx.InputDType("X"));
  return Status::Ok();
}

// prelu: Alpha of 1 value (all), C values (channel) or one per element of
// a sample (element); NHWC through channels_last.h.
Status InferPrelu(ShapeContext& ctx) {
  const std::string mode = ctx.Attr<std::string>("mode");
  if (mode != "all" && mode != "channel" && mode != "element") {
    return ctx.Error("mode " + mode + " is not all, channel or element");
  }
  PAREX_RETURN_IF_ERROR(CheckNchwView(ctx));
  ctx.ShareDimsAndDType("X", "Out");
  return Status::Ok();
}

// argsort: Out (sorted values) and Indices (int64) of X's dims.
Status InferArgsort(ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  if (Known(ctx, x)) {
    PAREX_RETURN_IF_ERROR(
        AxisOf(ctx, ctx.Attr<int>("axis"), static_cast<int>(x.size()), "axis")
            .status());
  }
  ctx.SetOutput("Out", x, ctx.InputDType("X"));
  ctx.SetOutput("Indices", x, DType::kInt64);
  return Status::Ok();
}

// max_pool2d_with_index (NCHW): Out and Mask (int32, the argmax's index in
// its H x W plane) of [N, C, oh, ow]; adaptive: ksize is (oh, ow).
Status InferMaxPoolWithIndex(ShapeContext& ctx) {
  const Dims x = ctx.InputDims("X");
  if (!Known(ctx, x)) {
    ctx.SetOutput("Out", {}, ctx.InputDType("X"));
    ctx.SetOutput("Mask", {}, DType::kInt32);
    return Status::Ok();
  }
  if (x.size() != 4) return ctx.Error("X " + DimsToString(x) + " is not NCHW");
  std::vector<int> k = ctx.Attr<std::vector<int>>("ksize");
  const std::vector<int> s = ctx.Attr<std::vector<int>>("strides");
  const std::vector<int> p = ctx.Attr<std::vector<int>>("paddings");
  if (k.size() != 2 || s.size() != 2 || p.size() != 2) {
    return ctx.Error("ksize, strides and paddings need 2 values each");
  }
  Dims out = {x[0], x[1], 0, 0};
  for (int d = 0; d < 2; ++d) {
    const int64_t in = x[2 + d];
    if (ctx.Attr<bool>("global_pooling")) {
      out[2 + d] = 1;
    } else if (ctx.Attr<bool>("adaptive")) {
      if (k[d] <= 0) return ctx.Error("adaptive output size must be positive");
      out[2 + d] = k[d];
    } else {
      if (k[d] <= 0 || s[d] <= 0 || p[d] < 0) {
        return ctx.Error("ksize and strides must be positive, paddings >= 0");
      }
      out[2 + d] = in < 0 ? -1 : (in + 2 * p[d] - k[d]) / s[d] + 1;
      if (in >= 0 && out[2 + d] <= 0) {
        return ctx.Error("the window does not fit X " + DimsToString(x));
      }
    }
  }
  ctx.SetOutput("Out", out, ctx.InputDType("X"));
  ctx.SetOutput("Mask", out, DType::kInt32);
  return Status::Ok();
}

// strided_slice's tensor-valued bounds, which parex does not read yet.
const std::vector<std::string>& StridedSliceTensorSlots() {
  static const std::vector<std::string> slots = {
      "StartsTensor",     "EndsTensor",     "StridesTensor",
      "StartsTensorList", "EndsTensorList", "StridesTensorList"};
  return slots;
}

Status InferStridedSlice(ShapeContext& ctx) {
  for (const std::string& slot : StridedSliceTensorSlots()) {
    if (ctx.HasInput(slot)) {
      return Unimplemented(ctx.op().Label() + ": " + slot +
                           " (bounds given as tensors) is not supported; "
                           "bounds as attributes are");
    }
  }
  const Dims in = ctx.InputDims("Input");
  if (!Known(ctx, in)) {
    ctx.SetOutput("Out", {}, ctx.InputDType("Input"));
    return Status::Ok();
  }
  StatusOr<StridedSliceSpec> spec = ComputeStridedSlice(
      in, ctx.Attr<std::vector<int>>("axes"),
      ctx.Attr<std::vector<int>>("starts"), ctx.Attr<std::vector<int>>("ends"),
      ctx.Attr<std::vector<int>>("strides"),
      ctx.Attr<std::vector<int>>("decrease_axis"));
  if (!spec.ok()) return ctx.Error(spec.status().message());
  ctx.SetOutput("Out", spec->decreased, ctx.InputDType("Input"));
  return Status::Ok();
}

// X@GRAD takes X's dims and dtype.
Status InferGradLikeX(ShapeContext& ctx) {
  ctx.SetOutput("X@GRAD", ctx.InputDims("X"), ctx.InputDType("X"));
  return Status::Ok();
}

// strided_slice and its gradient (tensor-valued bounds declared, refused).
void AddStridedSlice(OpSchemaRegistry* r) {
  auto strided_attrs = [](OpSchema& s) -> OpSchema& {
    for (const std::string& slot : StridedSliceTensorSlots()) {
      s.Input(slot, slot.find("List") != std::string::npos
                        ? kOptional | kDuplicable
                        : kOptional);
    }
    return s.Attr("axes", std::vector<int>{})
        .Attr("starts", std::vector<int>{})
        .Attr("ends", std::vector<int>{})
        .Attr("strides", std::vector<int>{})
        .Attr("infer_flags", std::vector<int>{})
        .Attr("decrease_axis", std::vector<int>{});
  };
  std::vector<std::string> strided_grad_reads = {"Input", "Out@GRAD"};
  for (const std::string& slot : StridedSliceTensorSlots()) {
    strided_grad_reads.push_back(slot);
  }
  OpSchema strided("strided_slice");
  strided.Input("Input").Output("Out");
  r->Add(std::move(
      strided_attrs(strided)
          .InferShape(InferStridedSlice)
          .Grad("strided_slice_grad", strided_grad_reads, {"Input@GRAD"})));
  OpSchema strided_grad("strided_slice_grad");
  strided_grad.Input("Input").Input("Out@GRAD").Output("Input@GRAD");
  r->Add(std::move(strided_attrs(strided_grad)
                       .InferShape([](ShapeContext& ctx) {
                         ctx.SetOutput("Input@GRAD", ctx.InputDims("Input"),
                                       ctx.InputDType("Input"));
                         return Status::Ok();
                       })
                       .KernelDTypeFromInput("Out@GRAD")));
}

// argsort and max_pool2d_with_index with their gradients.
void AddArgsortAndPoolWithIndex(OpSchemaRegistry* r) {
  r->Add(OpSchema("argsort")
             .Input("X")
             .Output("Out")
             .Output("Indices")
             .Attr("axis", -1)
             .Attr("descending", false)
             .InferShape(InferArgsort)
             .Grad("argsort_grad", {"X", "Indices", "Out@GRAD"}, {"X@GRAD"}));
  r->Add(OpSchema("argsort_grad")
             .Input("X")
             .Input("Indices")
             .Input("Out@GRAD")
             .Output("X@GRAD")
             .Attr("axis", -1)
             .Attr("descending", false)
             .InferShape(InferGradLikeX)
             .KernelDTypeFromInput("Out@GRAD"));
  auto pool_attrs = [](OpSchema& s) -> OpSchema& {
    return s.Attr("ksize", std::vector<int>{})
        .Attr("strides", std::vector<int>{1, 1})
        .Attr("paddings", std::vector<int>{0, 0})
        .Attr("global_pooling", false)
        .Attr("adaptive", false);
  };
  OpSchema pool("max_pool2d_with_index");
  pool.Input("X").Output("Out").Output("Mask");
  r->Add(std::move(pool_attrs(pool)
                       .InferShape(InferMaxPoolWithIndex)
                       .Grad("max_pool2d_with_index_grad",
                             {"X", "Mask", "Out@GRAD"}, {"X@GRAD"})));
  OpSchema pool_grad("max_pool2d_with_index_grad");
  pool_grad.Input("X").Input("Mask").Input("Out@GRAD").Output("X@GRAD");
  r->Add(std::move(pool_attrs(pool_grad)
                       .InferShape(InferGradLikeX)
                       .KernelDTypeFromInput("Out@GRAD")));
}

// pixel_shuffle and prelu with their gradients.
void AddPixelShuffleAndPrelu(OpSchemaRegistry* r) {
  r->Add(OpSchema("pixel_shuffle")
             .Input("X")
             .Output("Out")
             .Attr("upscale_factor", 1)
             .Attr("data_format", std::string("NCHW"))
             .InferShape(WithChannelsLast(InferPixelShuffle))
             .Grad("pixel_shuffle_grad", {"Out@GRAD"}, {"X@GRAD"}));
  r->Add(OpSchema("pixel_shuffle_grad")
             .Input("Out@GRAD")
             .Output("X@GRAD")
             .Attr("upscale_factor", 1)
             .Attr("data_format", std::string("NCHW"))
             .InferShape(WithChannelsLast([](ShapeContext& ctx) {
               PAREX_RETURN_IF_ERROR(CheckNchwView(ctx));
               const Dims g = ctx.InputDims("Out@GRAD");
               const int r = ctx.Attr<int>("upscale_factor");
               if (g.size() != 4 || r <= 0) {
                 return ctx.Error("Out@GRAD is not [N, C, H r, W r]");
               }
               ctx.SetOutput("X@GRAD", {g[0], g[1] * r * r, g[2] / r, g[3] / r},
                             ctx.InputDType("Out@GRAD"));
               return Status::Ok();
             })));
  r->Add(OpSchema("prelu")
             .Input("X")
             .Input("Alpha")
             .Output("Out")
             .Attr("mode", std::string("all"))
             .Attr("data_format", std::string("NCHW"))
             .InferShape(WithChannelsLast(InferPrelu))
             .Grad("prelu_grad", {"X", "Alpha", "Out@GRAD"},
                   {"X@GRAD", "Alpha@GRAD"}));
  r->Add(OpSchema("prelu_grad")
             .Input("X")
             .Input("Alpha")
             .Input("Out@GRAD")
             .Output("X@GRAD", kOptional)
             .Output("Alpha@GRAD", kOptional)
             .Attr("mode", std::string("all"))
             .Attr("data_format", std::string("NCHW"))
             .InferShape(WithChannelsLast([](ShapeContext& ctx) {
               PAREX_RETURN_IF_ERROR(CheckNchwView(ctx));
               ctx.SetOutput("X@GRAD", ctx.InputDims("X"), ctx.InputDType("X"));
               ctx.SetOutput("Alpha@GRAD", ctx.InputDims("Alpha"),
                             ctx.InputDType("Alpha"));
               return Status::Ok();
             })));
}

}  // namespace

void RegisterLayoutOps(OpSchemaRegistry* r) {
  AddStridedSlice(r);
  AddArgsortAndPoolWithIndex(r);
  AddPixelShuffleAndPrelu(r);
  r->Add(OpSchema("tile")
             .Input("X")
             .Input("RepeatTimes", kOptional)
             .Input("repeat_times_tensor", kOptional | kDuplicable)
             .Output("Out")
             .Attr("repeat_times", std::vector<int>{})
             .InferShape(InferTile)
             .ShapeFromValues()
             .Grad("tile_grad",
                   {"X", "RepeatTimes", "repeat_times_tensor", "Out@GRAD"},
                   {"X@GRAD"}));
  r->Add(OpSchema("tile_grad")
             .Input("X")
             .Input("RepeatTimes", kOptional)
             .Input("repeat_times_tensor", kOptional | kDuplicable)
             .Input("Out@GRAD")
             .Output("X@GRAD")
             .Attr("repeat_times", std::vector<int>{})
             .InferShape(InferGradLikeX)
             .KernelDTypeFromInput("Out@GRAD"));
  r->Add(OpSchema("flip")
             .Input("X")
             .Output("Out")
             .Attr("axis", std::vector<int>{})
             .InferShape(InferFlip));
  r->Add(OpSchema("roll")
             .Input("X")
             .Input("ShiftsTensor", kOptional)
             .Output("Out")
             .Attr("shifts", std::vector<int64_t>{})
             .Attr("axis", std::vector<int64_t>{})
             .InferShape(InferRoll)
             .Grad("roll_grad", {"X", "ShiftsTensor", "Out@GRAD"}, {"X@GRAD"}));
  r->Add(OpSchema("roll_grad")
             .Input("X")
             .Input("ShiftsTensor", kOptional)
             .Input("Out@GRAD")
             .Output("X@GRAD")
             .Attr("shifts", std::vector<int64_t>{})
             .Attr("axis", std::vector<int64_t>{})
             .InferShape(InferGradLikeX)
             .KernelDTypeFromInput("Out@GRAD"));
  r->Add(
      OpSchema("index_select")
          .Input("X")
          .Input("Index")
          .Output("Out")
          .Attr("dim", 0)
          .InferShape(InferIndexSelect)
          .Grad("index_select_grad", {"X", "Index", "Out@GRAD"}, {"X@GRAD"}));
  r->Add(OpSchema("index_select_grad")
             .Input("X")
             .Input("Index")
             .Input("Out@GRAD")
             .Output("X@GRAD")
             .Attr("dim", 0)
             .InferShape(InferGradLikeX)
             .KernelDTypeFromInput("Out@GRAD"));
}

}  // namespace parex
