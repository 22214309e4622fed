// Sliding windows over NCHW planes and NCDHW volumes, for the convolution
// and pooling kernels: the resolved geometry of one spatial dim, and im2col /
// col2im (vol2col / col2vol), which turn a convolution into one GEMM per
// image and group.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace parex::cpu {

// One spatial dim (height or width) of a window op, fully resolved.
struct WindowDim {
  int64_t in = 0;    // input extent
  int64_t out = 0;   // output extent (the op's inferred output)
  int64_t size = 1;  // window extent, undilated
  int64_t stride = 1;
  int64_t dilation = 1;
  int64_t pad_before = 0;  // top or left
  int64_t pad_after = 0;   // bottom or right
};

// Fills stride, dilation and paddings of dims[0 .. rank) ({h, w} or
// {d, h, w}) from Paddle's attributes, resolving "SAME" and "VALID" the way
// graph/ir/spec/window_spec.cc does. `dilations` may be null (pooling).
// REQUIRES: in and size are set; the op's shape inference accepted the
// attributes (rank strides and dilations, rank or 2 * rank paddings).
inline void ResolveWindows(const std::string& algorithm,
                           const std::vector<int>& strides,
                           const std::vector<int>* dilations,
                           const std::vector<int>& paddings, WindowDim* dims,
                           int rank = 2) {
  const bool pairs = static_cast<int>(paddings.size()) == 2 * rank;
  for (int i = 0; i < rank; ++i) {
    WindowDim& d = dims[i];
    d.stride = strides[i];
    d.dilation = dilations ? (*dilations)[i] : 1;
    d.pad_before = pairs ? paddings[2 * i] : paddings[i];
    d.pad_after = pairs ? paddings[2 * i + 1] : paddings[i];
    if (algorithm == "SAME") {
      const int64_t out = (d.in + d.stride - 1) / d.stride;
      const int64_t sum =
          std::max<int64_t>((out - 1) * d.stride + d.size - d.in, 0);
      d.pad_before = sum / 2;
      d.pad_after = sum - sum / 2;
      d.dilation = 1;
    } else if (algorithm == "VALID") {
      d.pad_before = d.pad_after = 0;
    }
  }
}

// ceil(a / b) for b > 0 and any sign of a. (Stride 1, the common case,
// skips the divisions: they are a visible share of im2col's time.)
inline int64_t CeilDiv(int64_t a, int64_t b) {
  if (b == 1) return a;
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

// The output positions o in [*lo, *hi) whose input index
// o * stride + offset lies inside [0, d.in).
inline void ValidRange(const WindowDim& d, int64_t offset, int64_t* lo,
                       int64_t* hi) {
  *lo = std::clamp<int64_t>(CeilDiv(-offset, d.stride), 0, d.out);
  *hi = std::clamp<int64_t>(CeilDiv(d.in - offset, d.stride), *lo, d.out);
}

// col[(c*h.size + i)*w.size + j][oy*w.out + ox] =
//   im[c][oy*h.stride - h.pad_before + i*h.dilation]
//        [ox*w.stride - w.pad_before + j*w.dilation], 0 outside the image.
// im: [channels, h.in, w.in]; col: [channels*h.size*w.size, h.out*w.out].
// `row_stride` (when not 0) spaces col's rows instead of h.out * w.out
// (Vol2Col writes one depth position's part of each row).
template <typename T>
void Im2Col(const T* im, int64_t channels, const WindowDim& h,
            const WindowDim& w, T* col, int64_t row_stride = 0) {
  if (row_stride == 0) row_stride = h.out * w.out;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t i = 0; i < h.size; ++i) {
      const int64_t h_offset = i * h.dilation - h.pad_before;
      int64_t y_lo, y_hi;
      ValidRange(h, h_offset, &y_lo, &y_hi);
      for (int64_t j = 0; j < w.size; ++j) {
        const int64_t w_offset = j * w.dilation - w.pad_before;
        int64_t x_lo, x_hi;
        ValidRange(w, w_offset, &x_lo, &x_hi);
        T* row = col + ((c * h.size + i) * w.size + j) * row_stride;
        std::fill(row, row + y_lo * w.out, T(0));
        for (int64_t oy = y_lo; oy < y_hi; ++oy) {
          const T* src = im + (c * h.in + oy * h.stride + h_offset) * w.in;
          T* dst = row + oy * w.out;
          std::fill(dst, dst + x_lo, T(0));
          if (w.stride == 1) {
            std::copy(src + x_lo + w_offset, src + x_hi + w_offset, dst + x_lo);
          } else {
            for (int64_t ox = x_lo; ox < x_hi; ++ox) {
              dst[ox] = src[ox * w.stride + w_offset];
            }
          }
          std::fill(dst + x_hi, dst + w.out, T(0));
        }
        std::fill(row + y_hi * w.out, row + h.out * w.out, T(0));
      }
    }
  }
}

// The adjoint of Im2Col: adds every col entry into the image element it was
// read from (entries read from padding are dropped).
// REQUIRES: im holds the values to accumulate onto (zeros for a fresh
// gradient).
template <typename T>
void Col2Im(const T* col, int64_t channels, const WindowDim& h,
            const WindowDim& w, T* im, int64_t row_stride = 0) {
  if (row_stride == 0) row_stride = h.out * w.out;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t i = 0; i < h.size; ++i) {
      const int64_t h_offset = i * h.dilation - h.pad_before;
      int64_t y_lo, y_hi;
      ValidRange(h, h_offset, &y_lo, &y_hi);
      for (int64_t j = 0; j < w.size; ++j) {
        const int64_t w_offset = j * w.dilation - w.pad_before;
        int64_t x_lo, x_hi;
        ValidRange(w, w_offset, &x_lo, &x_hi);
        const T* row = col + ((c * h.size + i) * w.size + j) * row_stride;
        for (int64_t oy = y_lo; oy < y_hi; ++oy) {
          T* dst = im + (c * h.in + oy * h.stride + h_offset) * w.in;
          const T* src = row + oy * w.out;
          for (int64_t ox = x_lo; ox < x_hi; ++ox) {
            dst[ox * w.stride + w_offset] += src[ox];
          }
        }
      }
    }
  }
}

// The 3-D forms, over [channels, d.in, h.in, w.in] volumes:
// col[((c*d.size + a)*h.size + i)*w.size + j][(oz*h.out + oy)*w.out + ox] =
//   im[c][oz*d.stride - d.pad_before + a*d.dilation][..][..] (as Im2Col per
// plane), 0 outside the volume.
template <typename T>
void Vol2Col(const T* im, int64_t channels, const WindowDim& d,
             const WindowDim& h, const WindowDim& w, T* col) {
  const int64_t plane_in = h.in * w.in, plane_out = h.out * w.out;
  const int64_t row_stride = d.out * plane_out, taps = h.size * w.size;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t a = 0; a < d.size; ++a) {
      const int64_t offset = a * d.dilation - d.pad_before;
      int64_t z_lo, z_hi;
      ValidRange(d, offset, &z_lo, &z_hi);
      T* rows = col + (c * d.size + a) * taps * row_stride;
      for (int64_t oz = 0; oz < d.out; ++oz) {
        if (oz >= z_lo && oz < z_hi) {
          Im2Col(im + (c * d.in + oz * d.stride + offset) * plane_in, 1, h, w,
                 rows + oz * plane_out, row_stride);
          continue;
        }
        for (int64_t t = 0; t < taps; ++t) {
          T* dst = rows + t * row_stride + oz * plane_out;
          std::fill(dst, dst + plane_out, T(0));
        }
      }
    }
  }
}

// The adjoint of Vol2Col. REQUIRES: as Col2Im.
template <typename T>
void Col2Vol(const T* col, int64_t channels, const WindowDim& d,
             const WindowDim& h, const WindowDim& w, T* im) {
  const int64_t plane_in = h.in * w.in, plane_out = h.out * w.out;
  const int64_t row_stride = d.out * plane_out, taps = h.size * w.size;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t a = 0; a < d.size; ++a) {
      const int64_t offset = a * d.dilation - d.pad_before;
      int64_t z_lo, z_hi;
      ValidRange(d, offset, &z_lo, &z_hi);
      const T* rows = col + (c * d.size + a) * taps * row_stride;
      for (int64_t oz = z_lo; oz < z_hi; ++oz) {
        Col2Im(rows + oz * plane_out, 1, h, w,
               im + (c * d.in + oz * d.stride + offset) * plane_in, row_stride);
      }
    }
  }
}

}  // namespace parex::cpu
