// pool2d and pool2d_grad on CPU (NCHW), max and avg, with Fluid's window
// rules: a window starts at o*stride - pad_before and ends at
// min(start + k, in + pad_before); avg divides by the window's area inside
// the image when `exclusive` (the default), else by that unclipped area;
// adaptive windows are [floor(o*in/out), ceil((o+1)*in/out)); max-pool
// gradients go to the first input equal to the output.
//
// REQUIRES (ensured by the schema's shape inference, which runs first):
// X [N,C,H,W]; Out and Out@GRAD [N,C,oh,ow] as inferred. pool2d with
// data_format NHWC (the channels-last pass's, or a program's own) runs on
// its [N,H,W,C] tensors directly, the same windows and the same sums.
#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "graph/ir/spec/channels_last.h"
#include "kernels/channels_last.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/spatial/im2col.h"

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

// The windows of every output row and column, computed once per run into
// the op's state (no allocation once the shape has been seen).
struct PoolSpans : KernelState {
  std::vector<Span> ys, xs;
  // Every window is k x k with stride k inside the image (no padding, no
  // clipping, adaptive windows that happen to be so included): the common
  // max pool, which gets a loop without per-window bounds.
  int64_t uniform = 0;
  // The shape these windows are of, and the dims it was derived from.
  PoolShape shape;
  Dims x_dims, out_dims;

  // The op's shape for X and Out of `x` and `out` (NHWC when
  // `channels_last`), its windows computed: again only when the dims change.
  const PoolShape& For(const KernelContext& ctx, const Dims& x, const Dims& out,
                       bool channels_last) {
    if (x != x_dims || out != out_dims || x_dims.empty()) {
      shape = channels_last
                  ? GetPoolShape(ctx, ToChannelsFirst(x), ToChannelsFirst(out))
                  : GetPoolShape(ctx, x, out);
      Compute(shape);
      x_dims = x;
      out_dims = out;
    }
    return shape;
  }

  void Compute(const PoolShape& s) {
    ys.resize(s.h.out);
    xs.resize(s.w.out);
    for (int64_t o = 0; o < s.h.out; ++o) ys[o] = WindowSpan(s, s.h, o);
    for (int64_t o = 0; o < s.w.out; ++o) xs[o] = WindowSpan(s, s.w, o);
    uniform = 0;
    const int64_t k = s.h.out > 0 ? ys[0].end - ys[0].begin : 0;
    if (k < 1 || s.w.out <= 0 || xs[0].end - xs[0].begin != k) return;
    for (int64_t o = 0; o < s.h.out; ++o) {
      if (ys[o].begin != o * k || ys[o].end != o * k + k) return;
    }
    for (int64_t o = 0; o < s.w.out; ++o) {
      if (xs[o].begin != o * k || xs[o].end != o * k + k) return;
    }
    uniform = k;
  }
};

// Max over the uniform k x k windows of one plane (k == 2 unrolled), folded
// from lowest() in the generic loop's order, so NaNs come out the same.
template <typename T>
void MaxPoolUniform(const T* in, int64_t w_in, int64_t oh, int64_t ow,
                    int64_t k, T* out) {
  constexpr T kLowest = std::numeric_limits<T>::lowest();
  for (int64_t oy = 0; oy < oh; ++oy) {
    const T* row = in + oy * k * w_in;
    T* o = out + oy * ow;
    if (k == 2) {
      const T* r0 = row;
      const T* r1 = row + w_in;
      for (int64_t ox = 0; ox < ow; ++ox) {
        T value = std::max(kLowest, r0[2 * ox]);
        value = std::max(value, r0[2 * ox + 1]);
        value = std::max(value, r1[2 * ox]);
        o[ox] = std::max(value, r1[2 * ox + 1]);
      }
      continue;
    }
    for (int64_t ox = 0; ox < ow; ++ox) {
      T value = kLowest;
      for (int64_t y = 0; y < k; ++y) {
        for (int64_t x = 0; x < k; ++x) {
          value = std::max(value, row[y * w_in + ox * k + x]);
        }
      }
      o[ox] = value;
    }
  }
}

bool IsChannelsLast(const KernelContext& ctx) {
  return ctx.HasAttr("data_format") &&
         ctx.Attr<std::string>("data_format") == "NHWC";
}

// pool2d over NHWC: each output pixel the max or mean of its window's
// pixels, C channels at a time, in the NCHW loop's order per channel (so
// the same values, NaNs included).
template <typename T>
inline __attribute__((always_inline)) void PoolNhwcLoops(const PoolShape& s,
                                                         const PoolSpans& spans,
                                                         int64_t n, int64_t c,
                                                         const T* in, T* out) {
  for (int64_t b = 0; b < n; ++b) {
    const T* image = in + b * s.h.in * s.w.in * c;
    for (int64_t oy = 0; oy < s.h.out; ++oy) {
      const Span ys = spans.ys[oy];
      for (int64_t ox = 0; ox < s.w.out; ++ox, out += c) {
        const Span xs = spans.xs[ox];
        if (ys.begin == ys.end || xs.begin == xs.end) {
          // Wholly in the padding, as the NCHW kernel.
          std::fill_n(out, c,
                      s.max ? static_cast<T>(-std::numeric_limits<float>::max())
                            : T(0));
          continue;
        }
        std::fill_n(out, c, s.max ? std::numeric_limits<T>::lowest() : T(0));
        for (int64_t y = ys.begin; y < ys.end; ++y) {
          for (int64_t xx = xs.begin; xx < xs.end; ++xx) {
            const T* pixel = image + (y * s.w.in + xx) * c;
            if (s.max) {
              for (int64_t k = 0; k < c; ++k)
                out[k] = std::max(out[k], pixel[k]);
            } else {
              for (int64_t k = 0; k < c; ++k) out[k] += pixel[k];
            }
          }
        }
        if (!s.max) {
          const T divisor = static_cast<T>(ys.divisor * xs.divisor);
          for (int64_t k = 0; k < c; ++k) out[k] /= divisor;
        }
      }
    }
  }
}

// PoolNhwc's loops run along the channels, contiguous in NHWC: compiled
// again for AVX2 and AVX-512 (the build's baseline is x86-64's SSE2), the
// loader picking the widest this CPU has (GCC's target_clones). fp32 only,
// the dtype inference runs.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void PoolNhwcF32(const PoolShape& s, const PoolSpans& spans, int64_t n,
                 int64_t c, const float* in, float* out) {
  PoolNhwcLoops<float>(s, spans, n, c, in, out);
}

template <typename T>
void PoolNhwc(const PoolShape& s, const PoolSpans& spans, int64_t n, int64_t c,
              const T* in, T* out) {
  if constexpr (std::is_same_v<T, float>) {
    PoolNhwcF32(s, spans, n, c, in, out);
  } else {
    PoolNhwcLoops<T>(s, spans, n, c, in, out);
  }
}

template <typename T>
Status Pool2dKernel(KernelContext& ctx) {
  const Tensor& x = *ctx.Input("X");
  Tensor* out_t = ctx.Output("Out");
  const bool nhwc = IsChannelsLast(ctx);
  PoolSpans& spans = *ctx.State<PoolSpans>();
  const PoolShape& s = spans.For(ctx, x.dims(), out_t->dims(), nhwc);
  if (nhwc) {
    PoolNhwc(s, spans, x.dims()[0], x.dims()[3], x.data<T>(), out_t->data<T>());
    return Status::Ok();
  }
  const int64_t in_plane = s.h.in * s.w.in, out_plane = s.h.out * s.w.out;
  for (int64_t p = 0; p < s.planes; ++p) {
    const T* in = x.data<T>() + p * in_plane;
    T* out = out_t->data<T>() + p * out_plane;
    if (s.max && spans.uniform > 0) {
      MaxPoolUniform(in, s.w.in, s.h.out, s.w.out, spans.uniform, out);
      continue;
    }
    for (int64_t oy = 0; oy < s.h.out; ++oy) {
      const Span ys = spans.ys[oy];
      for (int64_t ox = 0; ox < s.w.out; ++ox) {
        const Span xs = spans.xs[ox];
        T value;
        if (ys.begin == ys.end || xs.begin == xs.end) {
          // A window wholly in the padding (ceil_mode): Paddle's max starts
          // from -FLT_MAX (also for double) and keeps it; avg gives 0.
          value =
              s.max ? static_cast<T>(-std::numeric_limits<float>::max()) : T(0);
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

// Max-pool gradient over uniform k x k windows: the windows tile the covered
// part of the plane, so each input there is written once (the gradient at
// the window's first input equal to the output, zero elsewhere) and only the
// uncovered right and bottom margins need zeroing.
template <typename T>
void MaxPoolGradUniform(const T* in, const T* out, const T* dout, int64_t h_in,
                        int64_t w_in, int64_t oh, int64_t ow, int64_t k,
                        T* dx) {
  for (int64_t oy = 0; oy < oh; ++oy) {
    for (int64_t y = 0; y < k; ++y) {
      T* d = dx + (oy * k + y) * w_in;
      std::fill(d + ow * k, d + w_in, T(0));
    }
    if (k == 2) {
      // Branch-free: which of the four is the first equal to the output.
      T* d0 = dx + oy * 2 * w_in;
      T* d1 = d0 + w_in;
      const T* r0 = in + oy * 2 * w_in;
      const T* r1 = r0 + w_in;
      for (int64_t ox = 0; ox < ow; ++ox) {
        const int64_t o = oy * ow + ox;
        const T v = out[o], g = T(0) + dout[o];  // as 0 += dout
        const unsigned a = r0[2 * ox] == v, b = r0[2 * ox + 1] == v;
        const unsigned c = r1[2 * ox] == v, d = r1[2 * ox + 1] == v;
        const unsigned e0 = a, e1 = b & ~a & 1u, e2 = c & ~(a | b) & 1u;
        const unsigned e3 = d & ~(a | b | c) & 1u;
        d0[2 * ox] = e0 ? g : T(0);
        d0[2 * ox + 1] = e1 ? g : T(0);
        d1[2 * ox] = e2 ? g : T(0);
        d1[2 * ox + 1] = e3 ? g : T(0);
      }
      continue;
    }
    for (int64_t ox = 0; ox < ow; ++ox) {
      const int64_t o = oy * ow + ox;
      bool found = false;
      for (int64_t y = 0; y < k; ++y) {
        const int64_t row = (oy * k + y) * w_in + ox * k;
        for (int64_t x = 0; x < k; ++x) {
          const bool hit = !found && in[row + x] == out[o];
          dx[row + x] = hit ? T(0) + dout[o] : T(0);  // as 0 += dout
          found = found || hit;
        }
      }
    }
  }
  std::fill(dx + oh * k * w_in, dx + h_in * w_in, T(0));
}

// pool2d_grad over NHWC, C channels at a time: dx zeroed, then each output
// pixel's gradient added, in the NCHW kernel's order of outputs and window
// positions, to the first input of its window equal to its output (max; a
// mask per channel of whether that input was met) or to every input of its
// window (avg): the NCHW kernel's values bit for bit.
template <typename T>
inline __attribute__((always_inline)) void PoolGradNhwcLoops(
    const PoolShape& s, const PoolSpans& spans, int64_t n, int64_t c,
    const T* in, const T* out, const T* dout, T* dx, uint8_t* found) {
  const int64_t image = s.h.in * s.w.in * c;
  std::fill_n(dx, n * image, T(0));
  for (int64_t b = 0; b < n; ++b, in += image, dx += image) {
    for (int64_t oy = 0; oy < s.h.out; ++oy) {
      const Span ys = spans.ys[oy];
      for (int64_t ox = 0; ox < s.w.out; ++ox, out += c, dout += c) {
        const Span xs = spans.xs[ox];
        if (ys.begin == ys.end || xs.begin == xs.end) continue;
        const T divisor = static_cast<T>(ys.divisor * xs.divisor);
        if (s.max) std::fill_n(found, c, uint8_t{0});
        for (int64_t y = ys.begin; y < ys.end; ++y) {
          for (int64_t xx = xs.begin; xx < xs.end; ++xx) {
            const int64_t at = (y * s.w.in + xx) * c;
            const T* pixel = in + at;
            T* d = dx + at;
            if (s.max) {
              for (int64_t k = 0; k < c; ++k) {
                const bool hit = (found[k] == 0) & (pixel[k] == out[k]);
                d[k] += hit ? dout[k] : T(0);
                found[k] |= hit;
              }
            } else {
              for (int64_t k = 0; k < c; ++k) d[k] += dout[k] / divisor;
            }
          }
        }
      }
    }
  }
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void PoolGradNhwcF32(const PoolShape& s, const PoolSpans& spans, int64_t n,
                     int64_t c, const float* in, const float* out,
                     const float* dout, float* dx, uint8_t* found) {
  PoolGradNhwcLoops<float>(s, spans, n, c, in, out, dout, dx, found);
}

template <typename T>
void PoolGradNhwc(const PoolShape& s, const PoolSpans& spans, const Tensor& x,
                  const Tensor& out, const Tensor& dout, Tensor* dx) {
  const int64_t n = x.dims()[0], c = x.dims()[3];
  thread_local std::vector<uint8_t> found;
  if (static_cast<int64_t>(found.size()) < c) found.resize(c);
  if constexpr (std::is_same_v<T, float>) {
    PoolGradNhwcF32(s, spans, n, c, x.data<T>(), out.data<T>(), dout.data<T>(),
                    dx->data<T>(), found.data());
  } else {
    PoolGradNhwcLoops<T>(s, spans, n, c, x.data<T>(), out.data<T>(),
                         dout.data<T>(), dx->data<T>(), found.data());
  }
}

// One NCHW plane's gradient through windows that are not uniform: dx (zeroed
// by the caller) += each output's gradient at the first input of its window
// equal to the output (max) or over its window (avg).
template <typename T>
void PoolGradPlane(const PoolShape& s, const PoolSpans& spans, const T* in,
                   const T* out, const T* dout, T* dx) {
  for (int64_t oy = 0; oy < s.h.out; ++oy) {
    const Span ys = spans.ys[oy];
    for (int64_t ox = 0; ox < s.w.out; ++ox) {
      const Span xs = spans.xs[ox];
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

template <typename T>
Status Pool2dGradKernel(KernelContext& ctx) {
  Tensor* dx_t = ctx.Output("X@GRAD");
  if (dx_t == nullptr) return Status::Ok();
  const Tensor& x = *ctx.Input("X");
  const Tensor& out_t = *ctx.Input("Out");
  const Tensor& dout_t = *ctx.Input("Out@GRAD");
  PoolSpans& spans = *ctx.State<PoolSpans>();
  const bool nhwc = IsChannelsLast(ctx);
  const PoolShape& s = spans.For(ctx, x.dims(), out_t.dims(), nhwc);
  if (nhwc) {
    PoolGradNhwc<T>(s, spans, x, out_t, dout_t, dx_t);
    return Status::Ok();
  }
  const int64_t in_plane = s.h.in * s.w.in, out_plane = s.h.out * s.w.out;
  const bool uniform = s.max && spans.uniform > 0;
  if (!uniform) std::fill_n(dx_t->data<T>(), dx_t->numel(), T(0));
  for (int64_t p = 0; p < s.planes; ++p) {
    const T* in = x.data<T>() + p * in_plane;
    const T* out = out_t.data<T>() + p * out_plane;
    const T* dout = dout_t.data<T>() + p * out_plane;
    T* dx = dx_t->data<T>() + p * in_plane;
    if (uniform) {
      MaxPoolGradUniform(in, out, dout, s.h.in, s.w.in, s.h.out, s.w.out,
                         spans.uniform, dx);
    } else {
      PoolGradPlane(s, spans, in, out, dout, dx);
    }
  }
  return Status::Ok();
}

// pool2d and pool2d_grad NHWC run on their tensors wherever their kernels
// do (fp32, fp64).
bool NativeChannelsLastPool(KernelContext& ctx, DType dtype) {
  const Tensor* x = ctx.Input("X");
  return (dtype == DType::kFP32 || dtype == DType::kFP64) &&
         ctx.place().is_cpu() && x != nullptr && x->rank() == 4;
}

}  // namespace

void RegisterPool2dKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "pool2d", Pool2dKernel, float, double);
  RegisterNativeChannelsLast("pool2d", &NativeChannelsLastPool);
  PAREX_CPU_KERNEL(r, "pool2d_grad", Pool2dGradKernel, float, double);
  RegisterNativeChannelsLast("pool2d_grad", &NativeChannelsLastPool);
}

}  // namespace parex
