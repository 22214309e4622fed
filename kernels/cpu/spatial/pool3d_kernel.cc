// pool3d and pool3d_grad on CPU (NCDHW), max and avg, with pool2d's window
// rules per spatial dim (kernels/cpu/spatial/pool2d_kernel.cc): a window starts
// at o*stride - pad_before and ends at min(start + k, in + pad_before); avg
// divides by the window's volume inside the input when `exclusive`, else
// by that unclipped volume; adaptive windows are
// [floor(o*in/out), ceil((o+1)*in/out)); global_pooling pools the whole
// volume; max-pool gradients go to the first input (in d, h, w order) equal
// to the output. A window wholly in the padding (possible with ceil_mode)
// gives -FLT_MAX for max, as Paddle 2.6, and 0 for avg (Paddle: 0 / 0).
// Paddle's avg gradient scales by a float32 1 / window also for double;
// parex divides in T.
//
// REQUIRES (ensured by the schema's shape inference, which runs first):
// X [N,C,D,H,W]; Out and Out@GRAD [N,C,od,oh,ow] as inferred.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/spatial/im2col.h"

namespace parex {
namespace {

using cpu::WindowDim;

// The input range [begin, end) of an output position along one dim, and
// the extent the average divides by.
struct Span {
  int64_t begin, end, divisor;
};

// The windows of every output position of each dim, computed into the op's
// state (no allocation once the shape has been seen).
struct Pool3dPlan : KernelState {
  int64_t volumes = 0;  // N * C
  bool max = true;
  WindowDim dims[3];
  std::vector<Span> spans[3];

  void Compute(const KernelContext& ctx, const Dims& x, const Dims& out) {
    volumes = x[0] * x[1];
    max = ctx.Attr<std::string>("pooling_type") == "max";
    const bool exclusive = ctx.Attr<bool>("exclusive");
    const bool adaptive = ctx.Attr<bool>("adaptive");
    const auto ksize = ctx.Attr<std::vector<int>>("ksize");
    for (int i = 0; i < 3; ++i) {
      dims[i] = WindowDim();
      dims[i].in = x[2 + i];
      dims[i].out = out[2 + i];
      dims[i].size = ksize[i];
    }
    if (ctx.Attr<bool>("global_pooling")) {
      for (WindowDim& d : dims) d.size = d.in;  // stride 1, no padding
    } else if (!adaptive) {
      cpu::ResolveWindows(ctx.Attr<std::string>("padding_algorithm"),
                          ctx.Attr<std::vector<int>>("strides"), nullptr,
                          ctx.Attr<std::vector<int>>("paddings"), dims, 3);
    }
    for (int i = 0; i < 3; ++i) {
      const WindowDim& d = dims[i];
      spans[i].resize(d.out);
      for (int64_t o = 0; o < d.out; ++o) {
        Span& s = spans[i][o];
        if (adaptive) {
          s.begin = o * d.in / d.out;
          s.end = ((o + 1) * d.in + d.out - 1) / d.out;
          s.divisor = s.end - s.begin;
          continue;
        }
        const int64_t begin = o * d.stride - d.pad_before;
        const int64_t end = std::min(begin + d.size, d.in + d.pad_before);
        s.begin = std::max<int64_t>(begin, 0);
        s.end = std::max(s.begin, std::min(end, d.in));
        s.divisor = exclusive ? s.end - s.begin : end - begin;
      }
    }
  }
};

template <typename T>
Status Pool3dKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor& x = *ctx.Input("X");
  Tensor* out_t = ctx.Output("Out");
  Pool3dPlan& plan = *ctx.State<Pool3dPlan>();
  plan.Compute(ctx, x.dims(), out_t->dims());
  const WindowDim &dd = plan.dims[0], &dh = plan.dims[1], &dw = plan.dims[2];
  const int64_t in_volume = dd.in * dh.in * dw.in;
  const int64_t out_volume = dd.out * dh.out * dw.out;
  for (int64_t v = 0; v < plan.volumes; ++v) {
    const T* in = x.data<T>() + v * in_volume;
    T* out = out_t->data<T>() + v * out_volume;
    for (int64_t od = 0; od < dd.out; ++od) {
      const Span zs = plan.spans[0][od];
      for (int64_t oh = 0; oh < dh.out; ++oh) {
        const Span ys = plan.spans[1][oh];
        for (int64_t ow = 0; ow < dw.out; ++ow) {
          const Span xs = plan.spans[2][ow];
          T value = plan.max ? std::numeric_limits<T>::lowest() : T(0);
          for (int64_t z = zs.begin; z < zs.end; ++z) {
            for (int64_t y = ys.begin; y < ys.end; ++y) {
              const T* row = in + (z * dh.in + y) * dw.in;
              for (int64_t i = xs.begin; i < xs.end; ++i) {
                value = plan.max ? std::max(value, row[i]) : value + row[i];
              }
            }
          }
          if (zs.begin == zs.end || ys.begin == ys.end || xs.begin == xs.end) {
            // A window wholly in the padding (ceil_mode): Paddle's max
            // starts from -FLT_MAX, also for double.
            value = plan.max
                        ? static_cast<T>(-std::numeric_limits<float>::max())
                        : T(0);
          } else if (!plan.max) {
            value /= static_cast<T>(zs.divisor * ys.divisor * xs.divisor);
          }
          out[(od * dh.out + oh) * dw.out + ow] = value;
        }
      }
    }
  }
  return Status::Ok();
}

template <typename T>
Status Pool3dGradKernel(KernelContext& ctx) {
  Tensor* dx_t = ctx.Output("X@GRAD");
  if (dx_t == nullptr) return Status::Ok();
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Out", "Out@GRAD"}));
  const Tensor& x = *ctx.Input("X");
  const Tensor& out_t = *ctx.Input("Out");
  const Tensor& dout_t = *ctx.Input("Out@GRAD");
  Pool3dPlan& plan = *ctx.State<Pool3dPlan>();
  plan.Compute(ctx, x.dims(), out_t.dims());
  const WindowDim &dd = plan.dims[0], &dh = plan.dims[1], &dw = plan.dims[2];
  const int64_t in_volume = dd.in * dh.in * dw.in;
  const int64_t out_volume = dd.out * dh.out * dw.out;
  std::fill_n(dx_t->data<T>(), dx_t->numel(), T(0));
  for (int64_t v = 0; v < plan.volumes; ++v) {
    const T* in = x.data<T>() + v * in_volume;
    const T* out = out_t.data<T>() + v * out_volume;
    const T* dout = dout_t.data<T>() + v * out_volume;
    T* dx = dx_t->data<T>() + v * in_volume;
    for (int64_t od = 0; od < dd.out; ++od) {
      const Span zs = plan.spans[0][od];
      for (int64_t oh = 0; oh < dh.out; ++oh) {
        const Span ys = plan.spans[1][oh];
        for (int64_t ow = 0; ow < dw.out; ++ow) {
          const Span xs = plan.spans[2][ow];
          const int64_t o = (od * dh.out + oh) * dw.out + ow;
          if (zs.begin == zs.end || ys.begin == ys.end || xs.begin == xs.end) {
            continue;
          }
          const T g = plan.max
                          ? dout[o]
                          : dout[o] / static_cast<T>(zs.divisor * ys.divisor *
                                                     xs.divisor);
          bool found = false;
          for (int64_t z = zs.begin; z < zs.end && !found; ++z) {
            for (int64_t y = ys.begin; y < ys.end && !found; ++y) {
              const int64_t row = (z * dh.in + y) * dw.in;
              for (int64_t i = xs.begin; i < xs.end; ++i) {
                if (!plan.max) {
                  dx[row + i] += g;
                } else if (in[row + i] == out[o]) {
                  dx[row + i] += g;
                  found = true;
                  break;
                }
              }
            }
          }
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace

void RegisterPool3dKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "pool3d", Pool3dKernel, float, double);
  PAREX_CPU_KERNEL(r, "pool3d_grad", Pool3dGradKernel, float, double);
}

}  // namespace parex
