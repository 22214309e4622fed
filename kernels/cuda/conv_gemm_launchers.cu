// im2col, col2im and the channel-major move of conv_gemm_launchers.h: one
// thread per written element (grid-stride), so every element is written once
// and each sum is taken in a fixed order.
#include <algorithm>

#include "kernels/cuda/conv_gemm_launchers.h"
#include "kernels/cuda/fast_div.h"
#include "kernels/cuda/grid_stride.cuh"

namespace parex {
namespace {

using cuda_loops::BlocksFor;
using cuda_loops::FirstIndex;
using cuda_loops::GridStride;
using cuda_loops::kThreads;

// Im2ColShape in the index type of a launch: 32-bit where every index of
// the launch fits (64-bit division was most of these kernels' time).
template <typename I>
struct Shape {
  I c, h, w, kh, kw, oh, ow, pad_h, pad_w, stride_h, stride_w, dilation_h,
      dilation_w;
};

template <typename I>
Shape<I> ShapeOf(const Im2ColShape& s) {
  auto i = [](int64_t v) { return static_cast<I>(v); };
  return {i(s.c),         i(s.h),        i(s.w),        i(s.kh),
          i(s.kw),        i(s.oh),       i(s.ow),       i(s.pad_h),
          i(s.pad_w),     i(s.stride_h), i(s.stride_w), i(s.dilation_h),
          i(s.dilation_w)};
}

// Whether indices up to `largest` (and the window arithmetic) fit 32 bits.
bool Fits32(const Im2ColShape& s, int64_t largest) {
  const int64_t bound = int64_t{1} << 30;
  return largest < bound && s.h + s.pad_h + s.kh * s.dilation_h < bound &&
         s.w + s.pad_w + s.kw * s.dilation_w < bound &&
         s.oh * s.stride_h < bound && s.ow * s.stride_w < bound;
}

template <typename T, typename I>
__global__ void Im2ColKernel(const T* x, Shape<I> s, I n0, I nb, T* col,
                             I total) {
  const I cols = nb * s.oh * s.ow;
  for (I e = FirstIndex(); e < total; e += GridStride()) {
    const I q = e / cols, r = e - q * cols;
    const I j = q % s.kw, i = (q / s.kw) % s.kh, ci = q / (s.kw * s.kh);
    const I xo = r % s.ow, yo = (r / s.ow) % s.oh, n = r / (s.ow * s.oh);
    const I y = yo * s.stride_h - s.pad_h + i * s.dilation_h;
    const I xx = xo * s.stride_w - s.pad_w + j * s.dilation_w;
    const bool inside = y >= 0 && y < s.h && xx >= 0 && xx < s.w;
    col[e] = inside ? x[(((n0 + n) * s.c + ci) * s.h + y) * s.w + xx] : T(0);
  }
}

template <typename T, typename I>
__global__ void Col2ImKernel(const T* col, Shape<I> s, I n0, I nb, T* dx,
                             I total) {
  const I cols = nb * s.oh * s.ow;
  for (I e = FirstIndex(); e < total; e += GridStride()) {
    const I xx = e % s.w, y = (e / s.w) % s.h;
    const I ci = (e / (s.w * s.h)) % s.c, n = e / (s.w * s.h * s.c);
    T sum = 0;
    for (I i = 0; i < s.kh; ++i) {
      const I ys = y + s.pad_h - i * s.dilation_h;
      if (ys < 0 || ys % s.stride_h != 0) continue;
      const I yo = ys / s.stride_h;
      if (yo >= s.oh) continue;
      for (I j = 0; j < s.kw; ++j) {
        const I xs = xx + s.pad_w - j * s.dilation_w;
        if (xs < 0 || xs % s.stride_w != 0) continue;
        const I xo = xs / s.stride_w;
        if (xo >= s.ow) continue;
        sum += col[((ci * s.kh + i) * s.kw + j) * cols +
                   (n * s.oh + yo) * s.ow + xo];
      }
    }
    dx[n0 * s.c * s.h * s.w + e] = sum;
  }
}

template <typename T, typename I>
__global__ void ChannelMajorKernel(const T* dout, I n0, I nb, I m, I plane,
                                   T* out, I total) {
  for (I e = FirstIndex(); e < total; e += GridStride()) {
    const I p = e % plane, t = e / plane;
    const I n = t % nb, c = t / nb;
    out[e] = dout[((n0 + n) * m + c) * plane + p];
  }
}

// The 32-bit forms: every division by a launch constant is a FastDiv.
struct Im2ColDivs {
  FastDiv cols, kw, kh, ow, oh;
};

template <typename T>
__global__ void Im2ColFastKernel(const T* x, Shape<int32_t> s, int32_t n0,
                                 Im2ColDivs d, T* col, int32_t total) {
  const int32_t cols = static_cast<int32_t>(d.cols.divisor());
  for (int32_t e = FirstIndex(); e < total; e += GridStride()) {
    const int32_t q = d.cols.Div(e), r = e - q * cols;
    const int32_t t = d.kw.Div(q), j = q - t * s.kw;
    const int32_t ci = d.kh.Div(t), i = t - ci * s.kh;
    const int32_t u = d.ow.Div(r), xo = r - u * s.ow;
    const int32_t n = d.oh.Div(u), yo = u - n * s.oh;
    const int32_t y = yo * s.stride_h - s.pad_h + i * s.dilation_h;
    const int32_t xx = xo * s.stride_w - s.pad_w + j * s.dilation_w;
    const bool inside = y >= 0 && y < s.h && xx >= 0 && xx < s.w;
    col[e] = inside ? x[(((n0 + n) * s.c + ci) * s.h + y) * s.w + xx] : T(0);
  }
}

struct Col2ImDivs {
  FastDiv w, h, c, stride_h, stride_w;
};

template <typename T>
__global__ void Col2ImFastKernel(const T* col, Shape<int32_t> s, int32_t n0,
                                 int32_t nb, Col2ImDivs d, T* dx,
                                 int32_t total) {
  const int32_t cols = nb * s.oh * s.ow;
  for (int32_t e = FirstIndex(); e < total; e += GridStride()) {
    const int32_t a = d.w.Div(e), xx = e - a * s.w;
    const int32_t b = d.h.Div(a), y = a - b * s.h;
    const int32_t n = d.c.Div(b), ci = b - n * s.c;
    T sum = 0;
    for (int32_t i = 0; i < s.kh; ++i) {
      const int32_t ys = y + s.pad_h - i * s.dilation_h;
      if (ys < 0) continue;
      const int32_t yo = d.stride_h.Div(ys);
      if (yo * s.stride_h != ys || yo >= s.oh) continue;
      for (int32_t j = 0; j < s.kw; ++j) {
        const int32_t xs = xx + s.pad_w - j * s.dilation_w;
        if (xs < 0) continue;
        const int32_t xo = d.stride_w.Div(xs);
        if (xo * s.stride_w != xs || xo >= s.ow) continue;
        sum += col[((ci * s.kh + i) * s.kw + j) * cols +
                   (n * s.oh + yo) * s.ow + xo];
      }
    }
    dx[n0 * s.c * s.h * s.w + e] = sum;
  }
}

template <typename T>
__global__ void ChannelMajorFastKernel(const T* dout, int32_t n0, FastDiv plane,
                                       FastDiv nb, int32_t m, T* out,
                                       int32_t total) {
  const int32_t p_size = static_cast<int32_t>(plane.divisor());
  const int32_t nb_size = static_cast<int32_t>(nb.divisor());
  for (int32_t e = FirstIndex(); e < total; e += GridStride()) {
    const int32_t t = plane.Div(e), p = e - t * p_size;
    const int32_t c = nb.Div(t), n = t - c * nb_size;
    out[e] = dout[((n0 + n) * m + c) * p_size + p];
  }
}

}  // namespace

template <typename T>
cudaError_t LaunchIm2Col(const T* x, const Im2ColShape& s, int64_t n0,
                         int64_t nb, T* col, cudaStream_t stream) {
  const int64_t total = s.Rows() * nb * s.Plane();
  if (total <= 0) return cudaSuccess;
  const int64_t input = (n0 + nb) * s.c * s.h * s.w;
  if (Fits32(s, std::max(total, input))) {
    const Im2ColDivs d{FastDiv(static_cast<uint32_t>(nb * s.Plane())),
                       FastDiv(static_cast<uint32_t>(s.kw)),
                       FastDiv(static_cast<uint32_t>(s.kh)),
                       FastDiv(static_cast<uint32_t>(s.ow)),
                       FastDiv(static_cast<uint32_t>(s.oh))};
    Im2ColFastKernel<T><<<BlocksFor(total), kThreads, 0, stream>>>(
        x, ShapeOf<int32_t>(s), static_cast<int32_t>(n0), d, col,
        static_cast<int32_t>(total));
  } else {
    Im2ColKernel<T, int64_t><<<BlocksFor(total), kThreads, 0, stream>>>(
        x, ShapeOf<int64_t>(s), n0, nb, col, total);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchCol2Im(const T* col, const Im2ColShape& s, int64_t n0,
                         int64_t nb, T* dx, cudaStream_t stream) {
  const int64_t total = nb * s.c * s.h * s.w;
  if (total <= 0) return cudaSuccess;
  const int64_t largest =
      std::max((n0 + nb) * s.c * s.h * s.w, s.Rows() * nb * s.Plane());
  if (Fits32(s, largest)) {
    const Col2ImDivs d{FastDiv(static_cast<uint32_t>(s.w)),
                       FastDiv(static_cast<uint32_t>(s.h)),
                       FastDiv(static_cast<uint32_t>(s.c)),
                       FastDiv(static_cast<uint32_t>(s.stride_h)),
                       FastDiv(static_cast<uint32_t>(s.stride_w))};
    Col2ImFastKernel<T><<<BlocksFor(total), kThreads, 0, stream>>>(
        col, ShapeOf<int32_t>(s), static_cast<int32_t>(n0),
        static_cast<int32_t>(nb), d, dx, static_cast<int32_t>(total));
  } else {
    Col2ImKernel<T, int64_t><<<BlocksFor(total), kThreads, 0, stream>>>(
        col, ShapeOf<int64_t>(s), n0, nb, dx, total);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchChannelMajor(const T* dout, int64_t n0, int64_t nb, int64_t m,
                               int64_t plane, T* out, cudaStream_t stream) {
  const int64_t total = m * nb * plane;
  if (total <= 0) return cudaSuccess;
  if ((n0 + nb) * m * plane < (int64_t{1} << 30)) {
    ChannelMajorFastKernel<T><<<BlocksFor(total), kThreads, 0, stream>>>(
        dout, static_cast<int32_t>(n0), FastDiv(static_cast<uint32_t>(plane)),
        FastDiv(static_cast<uint32_t>(nb)), static_cast<int32_t>(m), out,
        static_cast<int32_t>(total));
  } else {
    ChannelMajorKernel<T, int64_t><<<BlocksFor(total), kThreads, 0, stream>>>(
        dout, n0, nb, m, plane, out, total);
  }
  return cudaGetLastError();
}

#define PAREX_INSTANTIATE_CONV_GEMM(T)                                        \
  template cudaError_t LaunchIm2Col<T>(const T*, const Im2ColShape&, int64_t, \
                                       int64_t, T*, cudaStream_t);            \
  template cudaError_t LaunchCol2Im<T>(const T*, const Im2ColShape&, int64_t, \
                                       int64_t, T*, cudaStream_t);            \
  template cudaError_t LaunchChannelMajor<T>(                                 \
      const T*, int64_t, int64_t, int64_t, int64_t, T*, cudaStream_t);
PAREX_INSTANTIATE_CONV_GEMM(float)
PAREX_INSTANTIATE_CONV_GEMM(double)
#undef PAREX_INSTANTIATE_CONV_GEMM

}  // namespace parex
