#include "kernels/cpu/spatial/conv_shape.h"

#include <string>
#include <vector>

namespace parex::cpu::conv {

ConvShape GetConvShape(const KernelContext& ctx, const Dims& in,
                       const Dims& filter, const Dims& out) {
  ConvShape s;
  s.n = in[0];
  s.c = in[1];
  s.m = filter[0];
  s.groups = ctx.Attr<int>("groups");
  s.c_per_group = s.c / s.groups;
  s.m_per_group = s.m / s.groups;
  const int rank = static_cast<int>(in.size()) - 2;
  s.volumetric = rank == 3;
  WindowDim dims[3];
  for (int i = 0; i < rank; ++i) {
    dims[i].in = in[2 + i];
    dims[i].size = filter[2 + i];
    dims[i].out = out[2 + i];
  }
  const auto dilations = ctx.Attr<std::vector<int>>("dilations");
  cpu::ResolveWindows(ctx.Attr<std::string>("padding_algorithm"),
                      ctx.Attr<std::vector<int>>("strides"), &dilations,
                      ctx.Attr<std::vector<int>>("paddings"), dims, rank);
  s.d = s.volumetric ? dims[0] : WindowDim{1, 1, 1, 1, 1, 0, 0};
  s.h = dims[rank - 2];
  s.w = dims[rank - 1];
  s.col_rows = s.c_per_group * s.d.size * s.h.size * s.w.size;
  s.col_cols = s.d.out * s.h.out * s.w.out;
  s.in_volume = s.d.in * s.h.in * s.w.in;
  auto plain = [](const WindowDim& d) {
    return d.size == 1 && d.stride == 1 && d.pad_before == 0 &&
           d.pad_after == 0;
  };
  s.direct = plain(s.d) && plain(s.h) && plain(s.w);
  return s;
}

bool DnnlParams(const ConvShape& s, DnnlConvParams* p) {
  if (s.volumetric) return false;
  if (s.n <= 0 || s.c <= 0 || s.m <= 0 || s.col_rows <= 0 || s.col_cols <= 0) {
    return false;
  }
  p->n = s.n;
  p->c = s.c;
  p->h = s.h.in;
  p->w = s.w.in;
  p->m = s.m;
  p->groups = s.groups;
  p->kh = s.h.size;
  p->kw = s.w.size;
  p->oh = s.h.out;
  p->ow = s.w.out;
  p->stride_h = s.h.stride;
  p->stride_w = s.w.stride;
  p->dilation_h = s.h.dilation;
  p->dilation_w = s.w.dilation;
  p->pad_top = s.h.pad_before;
  p->pad_bottom = s.h.pad_after;
  p->pad_left = s.w.pad_before;
  p->pad_right = s.w.pad_after;
  return true;
}

StatusOr<FusedActivation> ReadFusedActivation(const KernelContext& ctx) {
  FusedActivation a;
  if (!ctx.HasAttr("fuse_activation")) return a;
  const std::string act = ctx.Attr<std::string>("fuse_activation");
  if (act.empty()) return a;
  const float alpha =
      ctx.HasAttr("fuse_alpha") ? ctx.Attr<float>("fuse_alpha") : 0.0f;
  if (act == "relu") {
    a.kind = 1;
  } else if (act == "relu6") {
    a.kind = 2;
    if (alpha > 0.0f) a.threshold = alpha;
  } else if (act == "leaky_relu") {
    a.kind = 3;
    a.threshold = alpha;
  } else if (act == "hard_swish") {
    a.kind = 4;
  } else {
    return ctx.Error("fuse_activation '" + act +
                     "' is not one parex fuses (relu, relu6, leaky_relu, "
                     "hard_swish)");
  }
  return a;
}

bool ConstantFilter(const KernelContext& ctx) {
  return ctx.HasAttr("constant_filter") && ctx.Attr<bool>("constant_filter");
}

bool IsChannelsLast(const KernelContext& ctx) {
  return ctx.HasAttr("data_format") &&
         ctx.Attr<std::string>("data_format") == "NHWC";
}

}  // namespace parex::cpu::conv
