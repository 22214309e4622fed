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

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/index_walk.h"

namespace parex {
namespace {

using cpu::ForEachIndex;
using cpu::StridesOf;

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

}  // namespace

void RegisterLayoutKernels(KernelRegistry* r) {
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
