// argsort, max_pool2d_with_index and strided_slice with their gradients on
// CPU (graph/ir/ops/layout_ops.cc): ops that pick elements by order, by
// window maximum or by strides, whose gradients send Out@GRAD back to the
// picked elements.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "graph/ir/spec/strided_slice_spec.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/index_walk.h"

namespace parex {
namespace {

using cpu::ForEachIndex;
using cpu::StridesOf;

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

void RegisterSelectionKernels(KernelRegistry* r) {
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
}

}  // namespace parex
