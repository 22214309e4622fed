// nearest_interp_v2 / bilinear_interp_v2 and their gradient ops on CPU
// (NCHW, fp32 and fp64). The `interp_method` attribute picks the rule, as in
// Paddle. Per output row and column the source indices and weights are
// planned once per shape into the op's state, so a step does not allocate.
// The arithmetic of the plan is Paddle's: the index ratio is a float even
// for fp64 data (1 / scale with a scale attribute, in / out without,
// (in - 1) / (out - 1) with align_corners), weights are floats; with
// align_mode 0 and without align_corners bilinear samples at the half-pixel
// (i + 0.5) * ratio - 0.5 clamped at 0, otherwise at i * ratio; nearest
// rounds i * ratio with align_corners and truncates it without. Equal input
// and output extents copy.
//
// REQUIRES (ensured by the schema's shape inference, which runs first):
// X [N,C,H,W]; Out / Out@GRAD [N,C,out_h,out_w] with out_h, out_w > 0 as
// graph/ir/ops/interp_ops.cc computes them; attributes valid.
#include <algorithm>
#include <string>
#include <vector>

#include "graph/ir/spec/interp_spec.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/runtime_shape_context.h"

namespace parex {
namespace {

// Paddle's ratio of input to output positions along one dim.
float Ratio(int64_t in, int64_t out, float scale, bool align_corners) {
  if (out <= 1) return 0.f;
  if (align_corners) {
    return static_cast<float>(in - 1) / static_cast<float>(out - 1);
  }
  return scale > 0 ? static_cast<float>(1. / scale)
                   : static_cast<float>(in) / static_cast<float>(out);
}

// One spatial dim: output position o reads lo[o] (weight w_lo[o]) and, for
// bilinear, hi[o] (weight w_hi[o]).
struct Axis {
  std::vector<int64_t> lo, hi;
  std::vector<float> w_lo, w_hi;

  void Plan(int64_t in, int64_t out, float ratio, bool bilinear,
            bool align_corners, int align_mode) {
    lo.resize(out);
    hi.resize(out);
    w_lo.resize(out);
    w_hi.resize(out);
    const bool half_pixel = align_mode == 0 && !align_corners;
    for (int64_t o = 0; o < out; ++o) {
      const int k = static_cast<int>(o);
      const float scaled = ratio * static_cast<float>(k);
      if (!bilinear) {
        int i = align_corners ? static_cast<int>(scaled + 0.5)
                              : static_cast<int>(scaled);
        i = std::min<int>(std::max(i, 0), static_cast<int>(in - 1));
        lo[o] = hi[o] = i;
        w_lo[o] = 1.f;
        w_hi[o] = 0.f;
        continue;
      }
      // The half-pixel source position, in float (Paddle 2.6's
      // arithmetic: a double one differs from it in the last float bits).
      float src = ratio * (static_cast<float>(k) + 0.5f) - 0.5f;
      int a = half_pixel ? static_cast<int>(src) : static_cast<int>(scaled);
      a = std::min<int>(std::max(a, 0), static_cast<int>(in - 1));
      const int b = std::min<int>(a + 1, static_cast<int>(in - 1));
      src = src > 0 ? src : 0;
      const float d = half_pixel ? src - static_cast<float>(a)
                                 : scaled - static_cast<float>(a);
      lo[o] = a;
      hi[o] = b;
      w_hi[o] = d;
      w_lo[o] = 1.f - d;
    }
  }
};

struct InterpPlan : KernelState {
  Dims planned;  // X's dims the plan was made for
  bool copy = false, bilinear = false;
  int64_t planes = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  Axis h, w;

  float scale_h = -1.f, scale_w = -1.f;
  bool tensor_sizes = false;  // the op binds OutSize, SizeTensor or Scale

  // The scales come from the attribute or the op's Scale tensor, as the
  // shape rule read them (interp_spec.h); a new plan when they or the dims
  // change. Without size or scale tensors the scales never change, so a
  // planned step reads nothing.
  Status Compute(const KernelContext& ctx, const Dims& x, const Dims& out) {
    const bool same_dims = planned == x && out_h == out[2] && out_w == out[3];
    if (same_dims && !tensor_sizes) return Status::Ok();
    const RuntimeShapeContext shapes(ctx);
    PAREX_ASSIGN_OR_RETURN(InterpSizes sizes,
                           InterpSizesOf(shapes, x[2], x[3]));
    if (same_dims && scale_h == sizes.scale_h && scale_w == sizes.scale_w) {
      return Status::Ok();
    }
    tensor_sizes = BindsAny(shapes, kInterpSizeInputs);
    planned = x;
    planes = x[0] * x[1];
    in_h = x[2];
    in_w = x[3];
    out_h = out[2];
    out_w = out[3];
    scale_h = sizes.scale_h;
    scale_w = sizes.scale_w;
    copy = in_h == out_h && in_w == out_w;
    bilinear = ctx.Attr<std::string>("interp_method") == "bilinear";
    const bool corners = ctx.Attr<bool>("align_corners");
    const int mode = ctx.Attr<int>("align_mode");
    h.Plan(in_h, out_h, Ratio(in_h, out_h, scale_h, corners), bilinear, corners,
           mode);
    w.Plan(in_w, out_w, Ratio(in_w, out_w, scale_w, corners), bilinear, corners,
           mode);
    return Status::Ok();
  }
};

template <typename T>
Status InterpKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor& x = *ctx.Input("X");
  Tensor& out_t = *ctx.Output("Out");
  InterpPlan& p = *ctx.State<InterpPlan>();
  PAREX_RETURN_IF_ERROR(p.Compute(ctx, x.dims(), out_t.dims()));
  if (p.copy) {
    std::copy_n(x.data<T>(), x.numel(), out_t.data<T>());
    return Status::Ok();
  }
  for (int64_t v = 0; v < p.planes; ++v) {
    const T* in = x.data<T>() + v * p.in_h * p.in_w;
    T* out = out_t.data<T>() + v * p.out_h * p.out_w;
    for (int64_t k = 0; k < p.out_h; ++k) {
      const T* top = in + p.h.lo[k] * p.in_w;
      T* row = out + k * p.out_w;
      if (!p.bilinear) {
        for (int64_t l = 0; l < p.out_w; ++l) row[l] = top[p.w.lo[l]];
        continue;
      }
      const T* bottom = in + p.h.hi[k] * p.in_w;
      const T ds = static_cast<T>(p.h.w_lo[k]),
              dn = static_cast<T>(p.h.w_hi[k]);
      for (int64_t l = 0; l < p.out_w; ++l) {
        const int64_t a = p.w.lo[l], b = p.w.hi[l];
        const T de = static_cast<T>(p.w.w_lo[l]),
                dw = static_cast<T>(p.w.w_hi[l]);
        // Paddle's order of terms and products.
        row[l] = top[a] * ds * de + bottom[a] * dn * de + top[b] * ds * dw +
                 bottom[b] * dn * dw;
      }
    }
  }
  return Status::Ok();
}

template <typename T>
Status InterpGradKernel(KernelContext& ctx) {
  Tensor* dx_t = ctx.Output("X@GRAD");
  if (dx_t == nullptr) return Status::Ok();
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Out@GRAD"}));
  const Tensor& dout_t = *ctx.Input("Out@GRAD");
  InterpPlan& p = *ctx.State<InterpPlan>();
  PAREX_RETURN_IF_ERROR(p.Compute(ctx, dx_t->dims(), dout_t.dims()));
  if (p.copy) {
    std::copy_n(dout_t.data<T>(), dout_t.numel(), dx_t->data<T>());
    return Status::Ok();
  }
  std::fill_n(dx_t->data<T>(), dx_t->numel(), T(0));
  for (int64_t v = 0; v < p.planes; ++v) {
    const T* dout = dout_t.data<T>() + v * p.out_h * p.out_w;
    T* dx = dx_t->data<T>() + v * p.in_h * p.in_w;
    for (int64_t k = 0; k < p.out_h; ++k) {
      const T* row = dout + k * p.out_w;
      T* top = dx + p.h.lo[k] * p.in_w;
      if (!p.bilinear) {
        for (int64_t l = 0; l < p.out_w; ++l) top[p.w.lo[l]] += row[l];
        continue;
      }
      T* bottom = dx + p.h.hi[k] * p.in_w;
      const T ds = static_cast<T>(p.h.w_lo[k]),
              dn = static_cast<T>(p.h.w_hi[k]);
      for (int64_t l = 0; l < p.out_w; ++l) {
        const int64_t a = p.w.lo[l], b = p.w.hi[l];
        const T de = static_cast<T>(p.w.w_lo[l]),
                dw = static_cast<T>(p.w.w_hi[l]);
        const T g = row[l];
        top[a] += g * ds * de;
        bottom[a] += g * dn * de;
        top[b] += g * ds * dw;
        bottom[b] += g * dn * dw;
      }
    }
  }
  return Status::Ok();
}

}  // namespace

void RegisterInterpKernels(KernelRegistry* r) {
  for (const char* type : {"nearest_interp_v2", "bilinear_interp_v2"}) {
    PAREX_CPU_KERNEL(r, type, InterpKernel, float, double);
    PAREX_CPU_KERNEL(r, std::string(type) + "_grad", InterpGradKernel, float,
                     double);
  }
}

}  // namespace parex
