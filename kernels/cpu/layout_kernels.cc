// tile, flip, roll and index_select with their gradients on CPU
// (graph/ir/ops/layout_ops.cc). Each maps an element of Out to the element
// of X it copies, through row-major multi-indices; the gradients send
// Out@GRAD back along the same map (summing where several Out elements
// copy one X element: tile, index_select with repeated indices).
#include <algorithm>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "graph/ir/spec/strided_slice_spec.h"
#include "kernels/cpu/cpu_kernels.h"

namespace parex {
namespace {

// Row-major strides of `dims`.
std::vector<int64_t> StridesOf(const Dims& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) {
    s[d] = s[d + 1] * dims[d + 1];
  }
  return s;
}

// Calls f(out_flat, index) for every element of `dims` in row-major order,
// index being its multi-index.
template <typename F>
void ForEachIndex(const Dims& dims, F&& f) {
  int64_t n = 1;
  for (int64_t e : dims) n *= e;
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, index);
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
}

// The X element each Out element of tile copies: X's dims padded with
// leading 1s to Out's rank, each index taken modulo X's extent.
template <typename F>
Status ForEachTiled(const KernelContext& ctx, const Dims& x, const Dims& out,
                    F&& f) {
  if (x.size() > out.size()) return ctx.Error("Out has a lower rank than X");
  Dims padded(out.size() - x.size(), 1);
  padded.insert(padded.end(), x.begin(), x.end());
  for (size_t d = 0; d < out.size(); ++d) {
    if (padded[d] == 0 ? out[d] != 0 : out[d] % padded[d] != 0) {
      return ctx.Error("Out " + DimsToString(out) + " does not tile X " +
                       DimsToString(x));
    }
  }
  const std::vector<int64_t> strides = StridesOf(padded);
  ForEachIndex(out, [&](int64_t i, const std::vector<int64_t>& index) {
    int64_t src = 0;
    for (size_t d = 0; d < out.size(); ++d) {
      src += (index[d] % padded[d]) * strides[d];
    }
    f(i, src);
  });
  return Status::Ok();
}

template <typename T>
Status TileKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor* x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  const T* xd = x->data<T>();
  T* od = out->data<T>();
  return ForEachTiled(ctx, x->dims(), out->dims(),
                      [&](int64_t i, int64_t src) { od[i] = xd[src]; });
}

template <typename T>
Status TileGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Out@GRAD"}));
  const Tensor* dout = ctx.Input("Out@GRAD");
  Tensor* dx = ctx.Output("X@GRAD");
  T* dxd = dx->data<T>();
  std::fill_n(dxd, dx->numel(), T(0));
  const T* g = dout->data<T>();
  return ForEachTiled(ctx, dx->dims(), dout->dims(),
                      [&](int64_t i, int64_t src) { dxd[src] += g[i]; });
}

template <typename T>
Status FlipKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor* x = ctx.Input("X");
  const Dims& dims = x->dims();
  const int rank = x->rank();
  std::vector<bool> flipped(rank, false);
  for (int a : ctx.Attr<std::vector<int>>("axis")) {
    if (a < -rank || a >= rank) return ctx.Error("axis out of range");
    flipped[a < 0 ? a + rank : a] = true;
  }
  const std::vector<int64_t> strides = StridesOf(dims);
  const T* xd = x->data<T>();
  T* od = ctx.Output("Out")->data<T>();
  ForEachIndex(dims, [&](int64_t i, const std::vector<int64_t>& index) {
    int64_t src = 0;
    for (int d = 0; d < rank; ++d) {
      src += (flipped[d] ? dims[d] - 1 - index[d] : index[d]) * strides[d];
    }
    od[i] = xd[src];
  });
  return Status::Ok();
}

// roll's shift per dim of X (axis empty: one shift of the flattened X,
// returned as a shift of dim 0 of the [numel] view); `sign` -1 for the
// gradient. ShiftsTensor, when given, holds the shifts.
StatusOr<std::vector<int64_t>> RollShifts(const KernelContext& ctx,
                                          const Dims& dims, int sign,
                                          bool* flat) {
  std::vector<int64_t> shifts = ctx.Attr<std::vector<int64_t>>("shifts");
  if (const Tensor* t = ctx.Input("ShiftsTensor")) {
    if (t->dtype() != DType::kInt64) return ctx.Error("ShiftsTensor not int64");
    shifts.assign(t->data<int64_t>(), t->data<int64_t>() + t->numel());
  }
  const std::vector<int64_t> axis = ctx.Attr<std::vector<int64_t>>("axis");
  const int rank = static_cast<int>(dims.size());
  *flat = axis.empty();
  std::vector<int64_t> per_dim(*flat ? 1 : rank, 0);
  if (*flat) {
    if (shifts.size() != 1)
      return ctx.Error("a flattened roll takes one shift");
    per_dim[0] = sign * shifts[0];
    return per_dim;
  }
  if (axis.size() != shifts.size()) return ctx.Error("shifts and axis differ");
  for (size_t k = 0; k < axis.size(); ++k) {
    if (axis[k] < -rank || axis[k] >= rank)
      return ctx.Error("axis out of range");
    per_dim[axis[k] < 0 ? axis[k] + rank : axis[k]] += sign * shifts[k];
  }
  return per_dim;
}

// Out[(i + shift) mod n] = X[i] along each rolled dim.
template <typename T>
Status Roll(KernelContext& ctx, const Tensor& x, Tensor* out, int sign) {
  bool flat = false;
  PAREX_ASSIGN_OR_RETURN(std::vector<int64_t> shifts,
                         RollShifts(ctx, x.dims(), sign, &flat));
  const Dims dims = flat ? Dims{x.numel()} : x.dims();
  const std::vector<int64_t> strides = StridesOf(dims);
  const T* xd = x.data<T>();
  T* od = out->data<T>();
  ForEachIndex(dims, [&](int64_t i, const std::vector<int64_t>& index) {
    int64_t dst = 0;
    for (size_t d = 0; d < dims.size(); ++d) {
      const int64_t n = dims[d];
      const int64_t s = n == 0 ? 0 : ((shifts[d] % n) + n) % n;
      dst += ((index[d] + s) % std::max<int64_t>(n, 1)) * strides[d];
    }
    od[dst] = xd[i];
  });
  return Status::Ok();
}

template <typename T>
Status RollKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  return Roll<T>(ctx, *ctx.Input("X"), ctx.Output("Out"), 1);
}

template <typename T>
Status RollGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Out@GRAD"}));
  const Tensor* dout = ctx.Input("Out@GRAD");
  Tensor* dx = ctx.Output("X@GRAD");
  if (dout->dims() != dx->dims()) {
    return ctx.Error("Out@GRAD " + DimsToString(dout->dims()) +
                     " does not match X " + DimsToString(dx->dims()));
  }
  return Roll<T>(ctx, *dout, dx, -1);
}

// index_select's indices (int32 or int64), each in [0, extent).
StatusOr<std::vector<int64_t>> SelectIndices(const KernelContext& ctx,
                                             int64_t extent) {
  const Tensor* index = ctx.Input("Index");
  std::vector<int64_t> ids(index->numel());
  for (int64_t k = 0; k < index->numel(); ++k) {
    ids[k] = index->dtype() == DType::kInt64 ? index->data<int64_t>()[k]
                                             : index->data<int32_t>()[k];
    if (ids[k] < 0 || ids[k] >= extent) {
      return ctx.Error("Index[" + std::to_string(k) +
                       "] = " + std::to_string(ids[k]) +
                       " is out of range [0, " + std::to_string(extent) + ")");
    }
  }
  return ids;
}

// X viewed as [outer, n, inner] around `dim`; f(out element, X element).
// `out_numel`: the elements of Out (or Out@GRAD), checked against the
// selection.
template <typename F>
Status ForEachSelected(const KernelContext& ctx, const Dims& x,
                       int64_t out_numel, F&& f) {
  const int rank = static_cast<int>(x.size());
  int dim = ctx.Attr<int>("dim");
  if (dim < -rank || dim >= rank) return ctx.Error("dim out of range");
  if (dim < 0) dim += rank;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= x[d];
  for (int d = dim + 1; d < rank; ++d) inner *= x[d];
  PAREX_ASSIGN_OR_RETURN(std::vector<int64_t> ids, SelectIndices(ctx, x[dim]));
  const int64_t k_n = static_cast<int64_t>(ids.size());
  if (out_numel != outer * k_n * inner) {
    return ctx.Error("Out has " + std::to_string(out_numel) +
                     " elements, the selection " +
                     std::to_string(outer * k_n * inner));
  }
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < k_n; ++k) {
      for (int64_t i = 0; i < inner; ++i) {
        f((o * k_n + k) * inner + i, (o * x[dim] + ids[k]) * inner + i);
      }
    }
  }
  return Status::Ok();
}

template <typename T>
Status IndexSelectKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor* x = ctx.Input("X");
  const T* xd = x->data<T>();
  Tensor* out = ctx.Output("Out");
  T* od = out->data<T>();
  return ForEachSelected(ctx, x->dims(), out->numel(),
                         [&](int64_t o, int64_t src) { od[o] = xd[src]; });
}

template <typename T>
Status IndexSelectGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Out@GRAD"}));
  Tensor* dx = ctx.Output("X@GRAD");
  T* dxd = dx->data<T>();
  std::fill_n(dxd, dx->numel(), T(0));
  const Tensor* dout = ctx.Input("Out@GRAD");
  const T* g = dout->data<T>();
  return ForEachSelected(ctx, dx->dims(), dout->numel(),
                         [&](int64_t o, int64_t src) { dxd[src] += g[o]; });
}

// pixel_shuffle (NCHW): Out[n, c, h r + i, w r + j] = X[n, c r^2 + i r + j,
// h, w]; its gradient sends each element back (`back`).
template <typename T>
Status PixelShuffle(KernelContext& ctx, const Tensor& from, Tensor* to,
                    bool back) {
  const int64_t r = ctx.Attr<int>("upscale_factor");
  const Tensor& x = back ? *to : from;  // the [N, C r^2, H, W] side
  const Tensor& y = back ? from : *to;  // the [N, C, H r, W r] side
  if (x.rank() != 4 || y.rank() != 4 || r <= 0 ||
      x.dim(1) != y.dim(1) * r * r || y.dim(2) != x.dim(2) * r ||
      y.dim(3) != x.dim(3) * r) {
    return ctx.Error("X " + DimsToString(x.dims()) + " and Out " +
                     DimsToString(y.dims()) + " do not shuffle by " +
                     std::to_string(r));
  }
  const int64_t n = y.dim(0), c = y.dim(1), h = x.dim(2), w = x.dim(3);
  const T* src = from.data<T>();
  T* dst = to->data<T>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t i = 0; i < r; ++i)
        for (int64_t j = 0; j < r; ++j)
          for (int64_t hh = 0; hh < h; ++hh)
            for (int64_t ww = 0; ww < w; ++ww) {
              const int64_t xi =
                  ((b * c * r * r + k * r * r + i * r + j) * h + hh) * w + ww;
              const int64_t yi =
                  ((b * c + k) * h * r + hh * r + i) * w * r + ww * r + j;
              if (back) {
                dst[xi] = src[yi];
              } else {
                dst[yi] = src[xi];
              }
            }
  return Status::Ok();
}

template <typename T>
Status PixelShuffleKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  return PixelShuffle<T>(ctx, *ctx.Input("X"), ctx.Output("Out"), false);
}

template <typename T>
Status PixelShuffleGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Out@GRAD"}));
  return PixelShuffle<T>(ctx, *ctx.Input("Out@GRAD"), ctx.Output("X@GRAD"),
                         true);
}

// The Alpha index of element i of prelu's X (NCHW).
StatusOr<std::function<int64_t(int64_t)>> PreluAlphaIndex(
    const KernelContext& ctx, const Tensor& x, const Tensor& alpha) {
  const std::string mode = ctx.Attr<std::string>("mode");
  const int64_t per_sample =
      x.rank() > 0 && x.dim(0) > 0 ? x.numel() / x.dim(0) : x.numel();
  int64_t inner = 1;
  for (int d = 2; d < x.rank(); ++d) inner *= x.dim(d);
  const int64_t channels = x.rank() > 1 ? x.dim(1) : 1;
  const int64_t want = mode == "all"       ? 1
                       : mode == "channel" ? channels
                                           : per_sample;
  if (alpha.numel() != want) {
    return ctx.Error("Alpha has " + std::to_string(alpha.numel()) +
                     " values, mode " + mode + " takes " +
                     std::to_string(want));
  }
  if (mode == "all")
    return std::function<int64_t(int64_t)>([](int64_t) { return int64_t{0}; });
  if (mode == "channel") {
    return std::function<int64_t(int64_t)>(
        [inner, channels](int64_t i) { return (i / inner) % channels; });
  }
  return std::function<int64_t(int64_t)>(
      [per_sample](int64_t i) { return i % per_sample; });
}

template <typename T>
Status PreluKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Alpha"}));
  const Tensor* x = ctx.Input("X");
  const Tensor* alpha = ctx.Input("Alpha");
  PAREX_ASSIGN_OR_RETURN(auto at, PreluAlphaIndex(ctx, *x, *alpha));
  const T* xd = x->data<T>();
  const T* ad = alpha->data<T>();
  T* od = ctx.Output("Out")->data<T>();
  for (int64_t i = 0; i < x->numel(); ++i) {
    od[i] = xd[i] > T(0) ? xd[i] : ad[at(i)] * xd[i];
  }
  return Status::Ok();
}

// X@GRAD = dOut where x > 0, else alpha dOut; Alpha@GRAD sums x dOut where
// x <= 0.
template <typename T>
Status PreluGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Alpha", "Out@GRAD"}));
  const Tensor* x = ctx.Input("X");
  const Tensor* alpha = ctx.Input("Alpha");
  PAREX_ASSIGN_OR_RETURN(auto at, PreluAlphaIndex(ctx, *x, *alpha));
  const T* xd = x->data<T>();
  const T* ad = alpha->data<T>();
  const Tensor* dout = ctx.Input("Out@GRAD");
  if (dout->numel() != x->numel()) {
    return ctx.Error("Out@GRAD " + DimsToString(dout->dims()) +
                     " does not match X " + DimsToString(x->dims()));
  }
  const T* g = dout->data<T>();
  Tensor* dx = ctx.Output("X@GRAD");
  Tensor* dalpha = ctx.Output("Alpha@GRAD");
  if (dalpha != nullptr) std::fill_n(dalpha->data<T>(), dalpha->numel(), T(0));
  for (int64_t i = 0; i < x->numel(); ++i) {
    const bool pos = xd[i] > T(0);
    if (dx != nullptr) dx->data<T>()[i] = pos ? g[i] : ad[at(i)] * g[i];
    if (dalpha != nullptr && !pos) dalpha->data<T>()[at(i)] += xd[i] * g[i];
  }
  return Status::Ok();
}

// argsort along `axis`: each line of X sorted (ascending, or descending),
// ties in their order in X; Indices holds where each value came from.
template <typename T>
Status ArgsortKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor* x = ctx.Input("X");
  const int rank = x->rank();
  int axis = ctx.Attr<int>("axis");
  if (axis < -rank || axis >= rank) return ctx.Error("axis out of range");
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x->dim(d);
  for (int d = axis + 1; d < rank; ++d) inner *= x->dim(d);
  const int64_t n = x->dim(axis);
  const bool descending = ctx.Attr<bool>("descending");
  const T* xd = x->data<T>();
  T* od = ctx.Output("Out")->data<T>();
  int64_t* id = ctx.Output("Indices")->data<int64_t>();
  std::vector<int64_t> order(n);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      for (int64_t k = 0; k < n; ++k) order[k] = k;
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        const T va = xd[base + a * inner], vb = xd[base + b * inner];
        return descending ? va > vb : va < vb;
      });
      for (int64_t k = 0; k < n; ++k) {
        od[base + k * inner] = xd[base + order[k] * inner];
        id[base + k * inner] = order[k];
      }
    }
  }
  return Status::Ok();
}

// X@GRAD[.., Indices[k], ..] = Out@GRAD[.., k, ..] along `axis`.
template <typename T>
Status ArgsortGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Out@GRAD"}));
  const Tensor* ids = ctx.Input("Indices");
  const Tensor* dout = ctx.Input("Out@GRAD");
  Tensor* dx = ctx.Output("X@GRAD");
  const int rank = dx->rank();
  int axis = ctx.Attr<int>("axis");
  if (axis < -rank || axis >= rank || ids->dtype() != DType::kInt64 ||
      ids->numel() != dout->numel() || dx->numel() != dout->numel()) {
    return ctx.Error("Indices, Out@GRAD and X do not match");
  }
  if (axis < 0) axis += rank;
  int64_t inner = 1;
  for (int d = axis + 1; d < rank; ++d) inner *= dx->dim(d);
  const int64_t n = dx->dim(axis);
  const int64_t* id = ids->data<int64_t>();
  const T* g = dout->data<T>();
  T* dxd = dx->data<T>();
  std::fill_n(dxd, dx->numel(), T(0));
  for (int64_t e = 0; e < dout->numel(); ++e) {
    const int64_t k = (e / inner) % n;
    if (id[e] < 0 || id[e] >= n) return ctx.Error("Indices out of range");
    dxd[e + (id[e] - k) * inner] += g[e];
  }
  return Status::Ok();
}

// max_pool2d_with_index's window along one dim of X (extent `in`) for
// output position `o` of `out`: adaptive windows, or k wide every s.
struct Window {
  int64_t begin, end;
};
Window PoolWindow(bool adaptive, int64_t o, int64_t in, int64_t out, int64_t k,
                  int64_t s, int64_t p) {
  if (adaptive) {
    return {o * in / out, ((o + 1) * in + out - 1) / out};
  }
  const int64_t b = o * s - p;
  return {std::max<int64_t>(b, 0), std::min<int64_t>(b + k, in)};
}

template <typename T>
Status MaxPoolWithIndexKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor* x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  int32_t* mask = ctx.Output("Mask")->data<int32_t>();
  const int64_t h = x->dim(2), w = x->dim(3), oh = out->dim(2),
                ow = out->dim(3);
  if (h * w > std::numeric_limits<int32_t>::max()) {
    return ctx.Error("an H x W plane too large for an int32 Mask");
  }
  const std::vector<int> k = ctx.Attr<std::vector<int>>("ksize");
  const std::vector<int> s = ctx.Attr<std::vector<int>>("strides");
  const std::vector<int> p = ctx.Attr<std::vector<int>>("paddings");
  const bool adaptive = ctx.Attr<bool>("adaptive");
  const bool global = ctx.Attr<bool>("global_pooling");
  const T* xd = x->data<T>();
  T* od = out->data<T>();
  for (int64_t plane = 0; plane < x->dim(0) * x->dim(1); ++plane) {
    const T* in = xd + plane * h * w;
    for (int64_t y = 0; y < oh; ++y) {
      const Window ys = global
                            ? Window{0, h}
                            : PoolWindow(adaptive, y, h, oh, k[0], s[0], p[0]);
      for (int64_t xx = 0; xx < ow; ++xx) {
        const Window xs =
            global ? Window{0, w}
                   : PoolWindow(adaptive, xx, w, ow, k[1], s[1], p[1]);
        T best = static_cast<T>(-std::numeric_limits<float>::max());
        int64_t at = -1;
        for (int64_t i = ys.begin; i < ys.end; ++i) {
          for (int64_t j = xs.begin; j < xs.end; ++j) {
            if (in[i * w + j] > best) {
              best = in[i * w + j];
              at = i * w + j;
            }
          }
        }
        const int64_t o = (plane * oh + y) * ow + xx;
        od[o] = best;
        mask[o] = static_cast<int32_t>(at);
      }
    }
  }
  return Status::Ok();
}

// X@GRAD[Mask] += Out@GRAD within each plane.
template <typename T>
Status MaxPoolWithIndexGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Out@GRAD"}));
  const Tensor* mask = ctx.Input("Mask");
  const Tensor* dout = ctx.Input("Out@GRAD");
  Tensor* dx = ctx.Output("X@GRAD");
  if (dx->rank() != 4 || dout->rank() != 4 || mask->dtype() != DType::kInt32 ||
      mask->numel() != dout->numel() || dx->dim(0) != dout->dim(0) ||
      dx->dim(1) != dout->dim(1)) {
    return ctx.Error("Mask, Out@GRAD and X do not match");
  }
  const int64_t plane_in = dx->dim(2) * dx->dim(3);
  const int64_t plane_out = dout->dim(2) * dout->dim(3);
  T* dxd = dx->data<T>();
  std::fill_n(dxd, dx->numel(), T(0));
  const int32_t* m = mask->data<int32_t>();
  const T* g = dout->data<T>();
  for (int64_t e = 0; e < dout->numel(); ++e) {
    if (m[e] < 0) continue;  // a window with nothing in it
    if (m[e] >= plane_in) return ctx.Error("Mask out of range");
    dxd[(e / plane_out) * plane_in + m[e]] += g[e];
  }
  return Status::Ok();
}

// strided_slice's map: f(Out element, Input element) for every element the
// slice takes; `out_numel`, Out's (or Out@GRAD's) elements, checked first.
template <typename F>
Status ForEachStrided(const KernelContext& ctx, const Dims& in,
                      int64_t out_numel, F&& f) {
  StatusOr<StridedSliceSpec> spec = ComputeStridedSlice(
      in, ctx.Attr<std::vector<int>>("axes"),
      ctx.Attr<std::vector<int>>("starts"), ctx.Attr<std::vector<int>>("ends"),
      ctx.Attr<std::vector<int>>("strides"),
      ctx.Attr<std::vector<int>>("decrease_axis"));
  if (!spec.ok()) return ctx.Error(spec.status().message());
  int64_t n = 1;
  for (int64_t e : spec->out) n *= e;
  if (n != out_numel) {
    return ctx.Error("Out has " + std::to_string(out_numel) +
                     " elements, the slice " + std::to_string(n));
  }
  const std::vector<int64_t> strides = StridesOf(in);
  ForEachIndex(spec->out, [&](int64_t i, const std::vector<int64_t>& index) {
    int64_t src = 0;
    for (size_t d = 0; d < in.size(); ++d) {
      src += (spec->first[d] + index[d] * spec->step[d]) * strides[d];
    }
    f(i, src);
  });
  return Status::Ok();
}

template <typename T>
Status StridedSliceKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Input"}));
  const Tensor* x = ctx.Input("Input");
  Tensor* out = ctx.Output("Out");
  const T* xd = x->data<T>();
  T* od = out->data<T>();
  return ForEachStrided(ctx, x->dims(), out->numel(),
                        [&](int64_t i, int64_t src) { od[i] = xd[src]; });
}

template <typename T>
Status StridedSliceGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Out@GRAD"}));
  const Tensor* dout = ctx.Input("Out@GRAD");
  Tensor* dx = ctx.Output("Input@GRAD");
  T* dxd = dx->data<T>();
  std::fill_n(dxd, dx->numel(), T(0));
  const T* g = dout->data<T>();
  return ForEachStrided(ctx, dx->dims(), dout->numel(),
                        [&](int64_t i, int64_t src) { dxd[src] += g[i]; });
}

}  // namespace

void RegisterLayoutKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "strided_slice", StridedSliceKernel, float, double,
                   int32_t, int64_t, bool);
  PAREX_CPU_KERNEL(r, "strided_slice_grad", StridedSliceGradKernel, float,
                   double);
  PAREX_CPU_KERNEL(r, "argsort", ArgsortKernel, float, double, int32_t,
                   int64_t);
  PAREX_CPU_KERNEL(r, "argsort_grad", ArgsortGradKernel, float, double);
  PAREX_CPU_KERNEL(r, "max_pool2d_with_index", MaxPoolWithIndexKernel, float,
                   double);
  PAREX_CPU_KERNEL(r, "max_pool2d_with_index_grad", MaxPoolWithIndexGradKernel,
                   float, double);
  PAREX_CPU_KERNEL(r, "pixel_shuffle", PixelShuffleKernel, float, double);
  PAREX_CPU_KERNEL(r, "pixel_shuffle_grad", PixelShuffleGradKernel, float,
                   double);
  PAREX_CPU_KERNEL(r, "prelu", PreluKernel, float, double);
  PAREX_CPU_KERNEL(r, "prelu_grad", PreluGradKernel, float, double);
  PAREX_CPU_KERNEL(r, "tile", TileKernel, float, double, int32_t, int64_t,
                   bool);
  PAREX_CPU_KERNEL(r, "tile_grad", TileGradKernel, float, double);
  PAREX_CPU_KERNEL(r, "flip", FlipKernel, float, double, int32_t, int64_t,
                   bool);
  PAREX_CPU_KERNEL(r, "roll", RollKernel, float, double, int32_t, int64_t);
  PAREX_CPU_KERNEL(r, "roll_grad", RollGradKernel, float, double);
  PAREX_CPU_KERNEL(r, "index_select", IndexSelectKernel, float, double, int32_t,
                   int64_t);
  PAREX_CPU_KERNEL(r, "index_select_grad", IndexSelectGradKernel, float,
                   double);
}

}  // namespace parex
