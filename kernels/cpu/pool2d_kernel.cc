// pool2d and pool2d_grad on CPU (NCHW), max and avg, with Fluid's window
// rules: a window starts at o*stride - pad_before and ends at
// min(start + k, in + pad_before); avg divides by the window's area inside
// the image when `exclusive` (the default), else by that unclipped area;
// adaptive windows are [floor(o*in/out), ceil((o+1)*in/out)); max-pool
// gradients go to the first input equal to the output.
//
// REQUIRES (ensured by the schema's shape inference, which runs first):
// X [N,C,H,W]; Out and Out@GRAD [N,C,oh,ow] as inferred.
#include <algorithm>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/im2col.h"

namespace parex {
namespace {

using cpu::WindowDim;

struct PoolShape {
  int64_t planes;  // N * C
  WindowDim h, w;
  bool max;
  bool exclusive;
  bool adaptive;
};

PoolShape GetPoolShape(const KernelContext& ctx, const Dims& x,
                       const Dims& out) {
  PoolShape s;
  s.planes = x[0] * x[1];
  s.max = ctx.Attr<std::string>("pooling_type") == "max";
  s.exclusive = ctx.Attr<bool>("exclusive");
  s.adaptive = ctx.Attr<bool>("adaptive");
  const auto ksize = ctx.Attr<std::vector<int>>("ksize");
  WindowDim dims[2];
  for (int i = 0; i < 2; ++i) {
    dims[i].in = x[2 + i];
    dims[i].out = out[2 + i];
    dims[i].size = ksize[i];
  }
  if (ctx.Attr<bool>("global_pooling")) {
    for (WindowDim& d : dims) d.size = d.in;  // stride 1, no padding
  } else if (!s.adaptive) {
    cpu::ResolveWindows(ctx.Attr<std::string>("padding_algorithm"),
                        ctx.Attr<std::vector<int>>("strides"), nullptr,
                        ctx.Attr<std::vector<int>>("paddings"), dims);
  }
  s.h = dims[0];
  s.w = dims[1];
  return s;
}

// The input range [begin, end) of output position o along one dim, and the
// extent the average divides by.
struct Span {
  int64_t begin, end, divisor;
};

Span WindowSpan(const PoolShape& s, const WindowDim& d, int64_t o) {
  if (s.adaptive) {
    const int64_t begin = o * d.in / d.out;
    const int64_t end = ((o + 1) * d.in + d.out - 1) / d.out;
    return {begin, end, end - begin};
  }
  int64_t begin = o * d.stride - d.pad_before;
  int64_t end = std::min(begin + d.size, d.in + d.pad_before);
  const int64_t unclipped = end - begin;
  begin = std::max<int64_t>(begin, 0);
  end = std::min(end, d.in);
  return {begin, std::max(begin, end), s.exclusive ? end - begin : unclipped};
}

template <typename T>
Status Pool2dKernel(KernelContext& ctx) {
  const Tensor& x = *ctx.Input("X");
  Tensor* out_t = ctx.Output("Out");
  const PoolShape s = GetPoolShape(ctx, x.dims(), out_t->dims());
  const int64_t in_plane = s.h.in * s.w.in, out_plane = s.h.out * s.w.out;
  for (int64_t p = 0; p < s.planes; ++p) {
    const T* in = x.data<T>() + p * in_plane;
    T* out = out_t->data<T>() + p * out_plane;
    for (int64_t oy = 0; oy < s.h.out; ++oy) {
      const Span ys = WindowSpan(s, s.h, oy);
      for (int64_t ox = 0; ox < s.w.out; ++ox) {
        const Span xs = WindowSpan(s, s.w, ox);
        T value;
        if (ys.begin == ys.end || xs.begin == xs.end) {
          value = T(0);  // a window wholly in the padding
        } else if (s.max) {
          value = std::numeric_limits<T>::lowest();
          for (int64_t y = ys.begin; y < ys.end; ++y) {
            for (int64_t xx = xs.begin; xx < xs.end; ++xx) {
              value = std::max(value, in[y * s.w.in + xx]);
            }
          }
        } else {
          T sum = 0;
          for (int64_t y = ys.begin; y < ys.end; ++y) {
            for (int64_t xx = xs.begin; xx < xs.end; ++xx) {
              sum += in[y * s.w.in + xx];
            }
          }
          value = sum / static_cast<T>(ys.divisor * xs.divisor);
        }
        out[oy * s.w.out + ox] = value;
      }
    }
  }
  return Status::Ok();
}

template <typename T>
Status Pool2dGradKernel(KernelContext& ctx) {
  Tensor* dx_t = ctx.Output("X@GRAD");
  if (dx_t == nullptr) return Status::Ok();
  const Tensor& x = *ctx.Input("X");
  const Tensor& out_t = *ctx.Input("Out");
  const Tensor& dout_t = *ctx.Input("Out@GRAD");
  const PoolShape s = GetPoolShape(ctx, x.dims(), out_t.dims());
  const int64_t in_plane = s.h.in * s.w.in, out_plane = s.h.out * s.w.out;
  std::fill_n(dx_t->data<T>(), dx_t->numel(), T(0));
  for (int64_t p = 0; p < s.planes; ++p) {
    const T* in = x.data<T>() + p * in_plane;
    const T* out = out_t.data<T>() + p * out_plane;
    const T* dout = dout_t.data<T>() + p * out_plane;
    T* dx = dx_t->data<T>() + p * in_plane;
    for (int64_t oy = 0; oy < s.h.out; ++oy) {
      const Span ys = WindowSpan(s, s.h, oy);
      for (int64_t ox = 0; ox < s.w.out; ++ox) {
        const Span xs = WindowSpan(s, s.w, ox);
        const int64_t o = oy * s.w.out + ox;
        if (s.max) {
          bool found = false;
          for (int64_t y = ys.begin; y < ys.end && !found; ++y) {
            for (int64_t xx = xs.begin; xx < xs.end; ++xx) {
              if (in[y * s.w.in + xx] == out[o]) {
                dx[y * s.w.in + xx] += dout[o];
                found = true;
                break;
              }
            }
          }
        } else if (ys.begin < ys.end && xs.begin < xs.end) {
          const T g = dout[o] / static_cast<T>(ys.divisor * xs.divisor);
          for (int64_t y = ys.begin; y < ys.end; ++y) {
            for (int64_t xx = xs.begin; xx < xs.end; ++xx) {
              dx[y * s.w.in + xx] += g;
            }
          }
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace

void RegisterPool2dKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "pool2d", Pool2dKernel, float, double);
  PAREX_CPU_KERNEL(r, "pool2d_grad", Pool2dGradKernel, float, double);
}

}  // namespace parex
