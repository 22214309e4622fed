// Device kernels of pool2d and pool2d_grad. The forward pass gives each
// output element a thread that folds its window; the gradient gives each
// input element a thread that visits the windows containing it in the
// outputs' row-major order, so every input is written once, without atomics,
// and its additions happen in the CPU kernel's order (windows that do not
// overlap: each output's thread writes its own window, the same values).
#include <cfloat>

#include "kernels/cuda/fast_div.h"
#include "kernels/cuda/grid_stride.cuh"
#include "kernels/cuda/spatial_launchers.h"

namespace parex {
namespace {

using cuda_loops::BlocksFor;
using cuda_loops::FirstIndex;
using cuda_loops::GridStride;
using cuda_loops::kThreads;

template <typename T>
__device__ __forceinline__ T Lowest();
template <>
__device__ __forceinline__ float Lowest<float>() {
  return -FLT_MAX;
}
template <>
__device__ __forceinline__ double Lowest<double>() {
  return -DBL_MAX;
}

// PoolArgs in the index type of a launch: 32-bit where every index fits
// (integer division is the most of these kernels' time), else 64-bit.
template <typename I>
struct Dim {
  I in, out, size, stride, pad_before;
};
template <typename I>
struct Args {
  Dim<I> h, w;
  bool max, exclusive, adaptive;
};

template <typename I>
Dim<I> DimOf(const PoolDim& d) {
  return {static_cast<I>(d.in), static_cast<I>(d.out), static_cast<I>(d.size),
          static_cast<I>(d.stride), static_cast<I>(d.pad_before)};
}
template <typename I>
Args<I> ArgsOf(const PoolArgs& a) {
  return {DimOf<I>(a.h), DimOf<I>(a.w), a.max, a.exclusive, a.adaptive};
}

// Whether a launch over `total` elements may index in 32 bits (grid-stride
// steps and window arithmetic included).
bool Fits32(const PoolArgs& a, int64_t total) {
  const int64_t bound = int64_t{1} << 30;
  const int64_t in = a.planes * a.h.in * a.w.in;
  const int64_t out = a.planes * a.h.out * a.w.out;
  // Adaptive windows multiply an output position by the input extent.
  const bool products =
      !a.adaptive || (a.h.in * a.h.out < bound && a.w.in * a.w.out < bound);
  return total < bound && in < bound && out < bound && products &&
         a.h.size + a.h.stride + a.h.pad_before < bound &&
         a.w.size + a.w.stride + a.w.pad_before < bound;
}

// The input range [begin, end) of output position o along one dim and the
// extent an average divides by (the CPU kernel's WindowSpan).
template <typename I>
struct Span {
  I begin, end, divisor;
};

template <typename I>
__device__ Span<I> WindowSpan(const Args<I>& a, const Dim<I>& d, I o) {
  if (a.adaptive) {
    const I begin = o * d.in / d.out;
    const I end = ((o + 1) * d.in + d.out - 1) / d.out;
    return {begin, end, end - begin};
  }
  I begin = o * d.stride - d.pad_before;
  I end = min(begin + d.size, d.in + d.pad_before);
  const I unclipped = end - begin;
  begin = max(begin, I{0});
  end = min(end, d.in);
  return {begin, max(begin, end), a.exclusive ? end - begin : unclipped};
}

template <typename I>
__device__ __forceinline__ I FloorDiv(I a, I b) {
  const I q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

// Output positions [*lo, *hi] along one dim whose windows may contain input
// index i: a superset (one extra on each side), which callers narrow with
// WindowSpan.
template <typename I>
__device__ void Candidates(const Args<I>& a, const Dim<I>& d, I i, I* lo,
                           I* hi) {
  if (a.adaptive) {
    *lo = i * d.out / d.in - 1;
    *hi = ((i + 1) * d.out + d.in - 1) / d.in;
  } else {
    *lo = FloorDiv(i + d.pad_before - d.size, d.stride);
    *hi = FloorDiv(i + d.pad_before, d.stride);
  }
  *lo = max(*lo, I{0});
  *hi = min(*hi, d.out - 1);
}

template <typename T, typename I>
__global__ void Pool2dKernel(Args<I> a, const T* x, T* out, I total) {
  const I out_plane = a.h.out * a.w.out;
  for (I e = FirstIndex(); e < total; e += GridStride()) {
    const I p = e / out_plane, r = e % out_plane;
    const Span<I> ys = WindowSpan(a, a.h, r / a.w.out);
    const Span<I> xs = WindowSpan(a, a.w, r % a.w.out);
    const T* in = x + p * a.h.in * a.w.in;
    T value;
    if (ys.begin == ys.end || xs.begin == xs.end) {
      // A window wholly in the padding: Paddle's max gives -FLT_MAX (also
      // for double), avg 0.
      value = a.max ? static_cast<T>(-FLT_MAX) : T(0);
    } else if (a.max) {
      value = Lowest<T>();
      for (I y = ys.begin; y < ys.end; ++y) {
        for (I xx = xs.begin; xx < xs.end; ++xx) {
          const T v = in[y * a.w.in + xx];
          value = value < v ? v : value;  // std::max(value, v)
        }
      }
    } else {
      T sum = 0;
      for (I y = ys.begin; y < ys.end; ++y) {
        for (I xx = xs.begin; xx < xs.end; ++xx) {
          sum += in[y * a.w.in + xx];
        }
      }
      value = sum / static_cast<T>(ys.divisor * xs.divisor);
    }
    out[e] = value;
  }
}

// Whether input (y, x) is the first element of the window (ys, xs), in
// row-major order, equal to `target`.
template <typename T, typename I>
__device__ bool FirstEqual(const T* in, I w_in, const Span<I>& ys,
                           const Span<I>& xs, I y, I x, T target) {
  if (!(in[y * w_in + x] == target)) return false;
  for (I yy = ys.begin; yy <= y; ++yy) {
    const I x_end = yy < y ? xs.end : x;
    for (I xx = xs.begin; xx < x_end; ++xx) {
      if (in[yy * w_in + xx] == target) return false;
    }
  }
  return true;
}

template <typename T, typename I>
__global__ void Pool2dGradKernel(Args<I> a, const T* x, const T* out,
                                 const T* dout, T* dx, I total) {
  const I in_plane = a.h.in * a.w.in, out_plane = a.h.out * a.w.out;
  for (I e = FirstIndex(); e < total; e += GridStride()) {
    const I p = e / in_plane, r = e % in_plane;
    const I y = r / a.w.in, xi = r % a.w.in;
    const T* in = x + p * in_plane;
    const T* o_plane = out + p * out_plane;
    const T* d_plane = dout + p * out_plane;
    I oy_lo, oy_hi, ox_lo, ox_hi;
    Candidates(a, a.h, y, &oy_lo, &oy_hi);
    Candidates(a, a.w, xi, &ox_lo, &ox_hi);
    T acc = T(0);
    for (I oy = oy_lo; oy <= oy_hi; ++oy) {
      const Span<I> ys = WindowSpan(a, a.h, oy);
      if (y < ys.begin || y >= ys.end) continue;
      for (I ox = ox_lo; ox <= ox_hi; ++ox) {
        const Span<I> xs = WindowSpan(a, a.w, ox);
        if (xi < xs.begin || xi >= xs.end) continue;
        const I o = oy * a.w.out + ox;
        if (a.max) {
          if (FirstEqual(in, a.w.in, ys, xs, y, xi, o_plane[o])) {
            acc += d_plane[o];
          }
        } else {
          acc += d_plane[o] / static_cast<T>(ys.divisor * xs.divisor);
        }
      }
    }
    dx[e] = acc;
  }
}

// Windows that do not overlap (stride >= size on both dims, not adaptive):
// every input is in at most one window, so each output's thread writes its
// window's gradient (dx zeroed before): the same values the gather above
// writes (0 + the one addend), at a fraction of its index arithmetic.
template <typename T>
__global__ void Pool2dGradScatterKernel(Args<int32_t> a, const T* x,
                                        const T* out, const T* dout, T* dx,
                                        FastDiv out_plane, FastDiv w_out,
                                        int32_t total) {
  const int32_t in_plane = a.h.in * a.w.in;
  const int32_t planes_out = static_cast<int32_t>(out_plane.divisor());
  for (int32_t e = FirstIndex(); e < total; e += GridStride()) {
    const int32_t p = out_plane.Div(e), r = e - p * planes_out;
    const int32_t oy = w_out.Div(r), ox = r - oy * a.w.out;
    const Span<int32_t> ys = WindowSpan(a, a.h, oy);
    const Span<int32_t> xs = WindowSpan(a, a.w, ox);
    const T* in = x + p * in_plane;
    T* d = dx + p * in_plane;
    if (a.max) {
      const T target = out[e];
      for (int32_t y = ys.begin; y < ys.end; ++y) {
        for (int32_t xx = xs.begin; xx < xs.end; ++xx) {
          if (in[y * a.w.in + xx] == target) {
            d[y * a.w.in + xx] = T(0) + dout[e];
            y = ys.end;  // the first equal element only
            break;
          }
        }
      }
    } else {
      const T share = dout[e] / static_cast<T>(ys.divisor * xs.divisor);
      for (int32_t y = ys.begin; y < ys.end; ++y) {
        for (int32_t xx = xs.begin; xx < xs.end; ++xx) {
          d[y * a.w.in + xx] = T(0) + share;
        }
      }
    }
  }
}

}  // namespace

template <typename T>
cudaError_t LaunchPool2d(const PoolArgs& args, const T* x, T* out,
                         cudaStream_t stream) {
  const int64_t total = args.planes * args.h.out * args.w.out;
  if (total <= 0) return cudaSuccess;
  if (Fits32(args, total)) {
    Pool2dKernel<T, int32_t><<<BlocksFor(total), kThreads, 0, stream>>>(
        ArgsOf<int32_t>(args), x, out, static_cast<int32_t>(total));
  } else {
    Pool2dKernel<T, int64_t><<<BlocksFor(total), kThreads, 0, stream>>>(
        ArgsOf<int64_t>(args), x, out, total);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchPool2dGrad(const PoolArgs& args, const T* x, const T* out,
                             const T* dout, T* dx, cudaStream_t stream) {
  const int64_t total = args.planes * args.h.in * args.w.in;
  if (total <= 0) return cudaSuccess;
  const bool disjoint = !args.adaptive && args.h.stride >= args.h.size &&
                        args.w.stride >= args.w.size;
  const int64_t outputs = args.planes * args.h.out * args.w.out;
  if (disjoint && outputs > 0 && Fits32(args, total)) {
    const cudaError_t zeroed =
        cudaMemsetAsync(dx, 0, static_cast<size_t>(total) * sizeof(T), stream);
    if (zeroed != cudaSuccess) return zeroed;
    Pool2dGradScatterKernel<T><<<BlocksFor(outputs), kThreads, 0, stream>>>(
        ArgsOf<int32_t>(args), x, out, dout, dx,
        FastDiv(static_cast<uint32_t>(args.h.out * args.w.out)),
        FastDiv(static_cast<uint32_t>(args.w.out)),
        static_cast<int32_t>(outputs));
  } else if (Fits32(args, total)) {
    Pool2dGradKernel<T, int32_t><<<BlocksFor(total), kThreads, 0, stream>>>(
        ArgsOf<int32_t>(args), x, out, dout, dx, static_cast<int32_t>(total));
  } else {
    Pool2dGradKernel<T, int64_t><<<BlocksFor(total), kThreads, 0, stream>>>(
        ArgsOf<int64_t>(args), x, out, dout, dx, total);
  }
  return cudaGetLastError();
}

#define PAREX_INSTANTIATE_POOL(T)                                     \
  template cudaError_t LaunchPool2d<T>(const PoolArgs&, const T*, T*, \
                                       cudaStream_t);                 \
  template cudaError_t LaunchPool2dGrad<T>(                           \
      const PoolArgs&, const T*, const T*, const T*, T*, cudaStream_t);
PAREX_INSTANTIATE_POOL(float)
PAREX_INSTANTIATE_POOL(double)
#undef PAREX_INSTANTIATE_POOL

}  // namespace parex
