// Device kernels of pool2d and pool2d_grad. The forward pass gives each
// output element a thread that folds its window; the gradient gives each
// input element a thread that visits the windows containing it in the
// outputs' row-major order, so every input is written once, without atomics,
// and its additions happen in the CPU kernel's order.
#include <cfloat>

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

// The input range [begin, end) of output position o along one dim and the
// extent an average divides by (the CPU kernel's WindowSpan).
struct Span {
  int64_t begin, end, divisor;
};

__device__ Span WindowSpan(const PoolArgs& a, const PoolDim& d, int64_t o) {
  if (a.adaptive) {
    const int64_t begin = o * d.in / d.out;
    const int64_t end = ((o + 1) * d.in + d.out - 1) / d.out;
    return {begin, end, end - begin};
  }
  int64_t begin = o * d.stride - d.pad_before;
  int64_t end = min(begin + d.size, d.in + d.pad_before);
  const int64_t unclipped = end - begin;
  begin = max(begin, int64_t{0});
  end = min(end, d.in);
  return {begin, max(begin, end), a.exclusive ? end - begin : unclipped};
}

__device__ __forceinline__ int64_t FloorDiv(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

// Output positions [*lo, *hi] along one dim whose windows may contain input
// index i: a superset (one extra on each side), which callers narrow with
// WindowSpan.
__device__ void Candidates(const PoolArgs& a, const PoolDim& d, int64_t i,
                           int64_t* lo, int64_t* hi) {
  if (a.adaptive) {
    *lo = i * d.out / d.in - 1;
    *hi = ((i + 1) * d.out + d.in - 1) / d.in;
  } else {
    *lo = FloorDiv(i + d.pad_before - d.size, d.stride);
    *hi = FloorDiv(i + d.pad_before, d.stride);
  }
  *lo = max(*lo, int64_t{0});
  *hi = min(*hi, d.out - 1);
}

template <typename T>
__global__ void Pool2dKernel(PoolArgs a, const T* x, T* out, int64_t total) {
  const int64_t out_plane = a.h.out * a.w.out;
  for (int64_t e = FirstIndex(); e < total; e += GridStride()) {
    const int64_t p = e / out_plane, r = e % out_plane;
    const Span ys = WindowSpan(a, a.h, r / a.w.out);
    const Span xs = WindowSpan(a, a.w, r % a.w.out);
    const T* in = x + p * a.h.in * a.w.in;
    T value;
    if (ys.begin == ys.end || xs.begin == xs.end) {
      // A window wholly in the padding: Paddle's max gives -FLT_MAX (also
      // for double), avg 0.
      value = a.max ? static_cast<T>(-FLT_MAX) : T(0);
    } else if (a.max) {
      value = Lowest<T>();
      for (int64_t y = ys.begin; y < ys.end; ++y) {
        for (int64_t xx = xs.begin; xx < xs.end; ++xx) {
          const T v = in[y * a.w.in + xx];
          value = value < v ? v : value;  // std::max(value, v)
        }
      }
    } else {
      T sum = 0;
      for (int64_t y = ys.begin; y < ys.end; ++y) {
        for (int64_t xx = xs.begin; xx < xs.end; ++xx) {
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
template <typename T>
__device__ bool FirstEqual(const T* in, int64_t w_in, const Span& ys,
                           const Span& xs, int64_t y, int64_t x, T target) {
  if (!(in[y * w_in + x] == target)) return false;
  for (int64_t yy = ys.begin; yy <= y; ++yy) {
    const int64_t x_end = yy < y ? xs.end : x;
    for (int64_t xx = xs.begin; xx < x_end; ++xx) {
      if (in[yy * w_in + xx] == target) return false;
    }
  }
  return true;
}

template <typename T>
__global__ void Pool2dGradKernel(PoolArgs a, const T* x, const T* out,
                                 const T* dout, T* dx, int64_t total) {
  const int64_t in_plane = a.h.in * a.w.in, out_plane = a.h.out * a.w.out;
  for (int64_t e = FirstIndex(); e < total; e += GridStride()) {
    const int64_t p = e / in_plane, r = e % in_plane;
    const int64_t y = r / a.w.in, xi = r % a.w.in;
    const T* in = x + p * in_plane;
    const T* o_plane = out + p * out_plane;
    const T* d_plane = dout + p * out_plane;
    int64_t oy_lo, oy_hi, ox_lo, ox_hi;
    Candidates(a, a.h, y, &oy_lo, &oy_hi);
    Candidates(a, a.w, xi, &ox_lo, &ox_hi);
    T acc = T(0);
    for (int64_t oy = oy_lo; oy <= oy_hi; ++oy) {
      const Span ys = WindowSpan(a, a.h, oy);
      if (y < ys.begin || y >= ys.end) continue;
      for (int64_t ox = ox_lo; ox <= ox_hi; ++ox) {
        const Span xs = WindowSpan(a, a.w, ox);
        if (xi < xs.begin || xi >= xs.end) continue;
        const int64_t o = oy * a.w.out + ox;
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

}  // namespace

template <typename T>
cudaError_t LaunchPool2d(const PoolArgs& args, const T* x, T* out,
                         cudaStream_t stream) {
  const int64_t total = args.planes * args.h.out * args.w.out;
  if (total <= 0) return cudaSuccess;
  Pool2dKernel<T>
      <<<BlocksFor(total), kThreads, 0, stream>>>(args, x, out, total);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchPool2dGrad(const PoolArgs& args, const T* x, const T* out,
                             const T* dout, T* dx, cudaStream_t stream) {
  const int64_t total = args.planes * args.h.in * args.w.in;
  if (total <= 0) return cudaSuccess;
  Pool2dGradKernel<T><<<BlocksFor(total), kThreads, 0, stream>>>(
      args, x, out, dout, dx, total);
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
