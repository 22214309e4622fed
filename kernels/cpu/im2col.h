// Sliding windows over NCHW planes, for the conv2d and pool2d kernels: the
// resolved geometry of one spatial dim, and im2col / col2im, which turn a
// convolution into one GEMM per image and group.
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
// graph/ir/ops/window_spec.cc does. `dilations` may be null (pooling).
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
template <typename T>
void Im2Col(const T* im, int64_t channels, const WindowDim& h,
            const WindowDim& w, T* col) {
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t i = 0; i < h.size; ++i) {
      const int64_t h_offset = i * h.dilation - h.pad_before;
      int64_t y_lo, y_hi;
      ValidRange(h, h_offset, &y_lo, &y_hi);
      for (int64_t j = 0; j < w.size; ++j) {
        const int64_t w_offset = j * w.dilation - w.pad_before;
        int64_t x_lo, x_hi;
        ValidRange(w, w_offset, &x_lo, &x_hi);
        T* row = col + ((c * h.size + i) * w.size + j) * h.out * w.out;
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
            const WindowDim& w, T* im) {
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t i = 0; i < h.size; ++i) {
      const int64_t h_offset = i * h.dilation - h.pad_before;
      int64_t y_lo, y_hi;
      ValidRange(h, h_offset, &y_lo, &y_hi);
      for (int64_t j = 0; j < w.size; ++j) {
        const int64_t w_offset = j * w.dilation - w.pad_before;
        int64_t x_lo, x_hi;
        ValidRange(w, w_offset, &x_lo, &x_hi);
        const T* row = col + ((c * h.size + i) * w.size + j) * h.out * w.out;
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

}  // namespace parex::cpu
