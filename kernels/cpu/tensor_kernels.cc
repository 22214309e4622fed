// stack, gather, expand_v2 and where on CPU, with their gradient ops.
// Semantics and dims rules: graph/ir/ops/tensor_ops.cc.
//
// REQUIRES (ensured by the schemas' shape inference, which runs first): the
// outputs have the inferred dims; the dtypes of the inputs a kernel reads as
// T are checked here.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/cpu_kernels.h"

namespace parex {
namespace {

int64_t Product(const Dims& d, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= d[i];
  return n;
}

// ---- stack ------------------------------------------------------------------
// Each input viewed as [outer, inner] around the stacked axis: row o of Y is
// the n inputs' rows o one after the other.

struct StackLayout {
  int64_t outer = 0;
  int64_t inner = 0;
};

StackLayout StackLayoutOf(const KernelContext& ctx, const Dims& x) {
  const int rank = static_cast<int>(x.size());
  int axis = ctx.Attr<int>("axis");
  if (axis < 0) axis += rank + 1;
  return {Product(x, 0, axis), Product(x, axis, x.size())};
}

template <typename T>
Status StackKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const std::vector<const Tensor*> xs = ctx.Inputs("X");
  const StackLayout l = StackLayoutOf(ctx, xs[0]->dims());
  const int64_t n = static_cast<int64_t>(xs.size());
  T* y = ctx.Output("Y")->data<T>();
  for (int64_t i = 0; i < n && l.inner > 0; ++i) {
    const T* x = xs[i]->data<T>();
    for (int64_t o = 0; o < l.outer; ++o) {
      std::memcpy(y + (o * n + i) * l.inner, x + o * l.inner,
                  l.inner * sizeof(T));
    }
  }
  return Status::Ok();
}

// X@GRAD[i] (when named) gets the slices of Y@GRAD that X[i] gave Y.
template <typename T>
Status StackGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Y@GRAD"}));
  const std::vector<const Tensor*> xs = ctx.Inputs("X");
  const StackLayout l = StackLayoutOf(ctx, xs[0]->dims());
  const int64_t n = static_cast<int64_t>(xs.size());
  const T* dy = ctx.Input("Y@GRAD")->data<T>();
  const int64_t outputs = std::min<int64_t>(n, ctx.OutputCount("X@GRAD"));
  for (int64_t i = 0; i < outputs && l.inner > 0; ++i) {
    if (ctx.OutputVar("X@GRAD", static_cast<int>(i)) == nullptr) continue;
    T* dx = ctx.Output("X@GRAD", static_cast<int>(i))->data<T>();
    for (int64_t o = 0; o < l.outer; ++o) {
      std::memcpy(dx + o * l.inner, dy + (o * n + i) * l.inner,
                  l.inner * sizeof(T));
    }
  }
  return Status::Ok();
}

// ---- gather -----------------------------------------------------------------
// X viewed as [outer, extent, inner] around `axis`; Out as [outer, k, inner]
// for the k indices.

struct GatherLayout {
  int64_t outer = 0;
  int64_t extent = 0;
  int64_t inner = 0;
};

GatherLayout GatherLayoutOf(const KernelContext& ctx, const Dims& x) {
  const int rank = static_cast<int>(x.size());
  int axis = ctx.Attr<int>("axis");
  if (axis < 0) axis += rank;
  return {Product(x, 0, axis), x[axis], Product(x, axis + 1, x.size())};
}

// Index j as int64. REQUIRES: Index is int32 or int64 (the schema checked).
int64_t IndexAt(const Tensor& index, int64_t j) {
  return index.dtype() == DType::kInt32 ? index.data<int32_t>()[j]
                                        : index.data<int64_t>()[j];
}

// Every index lies in [0, extent). The kernels then read them in place, so a
// step allocates nothing.
Status CheckIndices(const KernelContext& ctx, const Tensor& index,
                    int64_t extent) {
  for (int64_t j = 0; j < index.numel(); ++j) {
    const int64_t v = IndexAt(index, j);
    if (v < 0 || v >= extent) {
      return ctx.Error("Index[" + std::to_string(j) +
                       "] = " + std::to_string(v) + " is outside [0, " +
                       std::to_string(extent) + ") along axis " +
                       std::to_string(ctx.Attr<int>("axis")));
    }
  }
  return Status::Ok();
}

template <typename T>
Status GatherKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor& x = *ctx.Input("X");
  const GatherLayout l = GatherLayoutOf(ctx, x.dims());
  const Tensor& index = *ctx.Input("Index");
  PAREX_RETURN_IF_ERROR(CheckIndices(ctx, index, l.extent));
  const int64_t k = index.numel();
  const T* xd = x.data<T>();
  T* out = ctx.Output("Out")->data<T>();
  for (int64_t o = 0; o < l.outer && l.inner > 0; ++o) {
    for (int64_t j = 0; j < k; ++j) {
      std::memcpy(out + (o * k + j) * l.inner,
                  xd + (o * l.extent + IndexAt(index, j)) * l.inner,
                  l.inner * sizeof(T));
    }
  }
  return Status::Ok();
}

// X@GRAD sums the gradients of every slice an index picked (an index given
// twice gets both).
template <typename T>
Status GatherGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Out@GRAD"}));
  Tensor* dx_t = ctx.Output("X@GRAD");
  const GatherLayout l = GatherLayoutOf(ctx, dx_t->dims());
  const Tensor& index = *ctx.Input("Index");
  PAREX_RETURN_IF_ERROR(CheckIndices(ctx, index, l.extent));
  const int64_t k = index.numel();
  const T* dout = ctx.Input("Out@GRAD")->data<T>();
  T* dx = dx_t->data<T>();
  std::fill(dx, dx + dx_t->numel(), T(0));
  for (int64_t o = 0; o < l.outer; ++o) {
    for (int64_t j = 0; j < k; ++j) {
      const T* src = dout + (o * k + j) * l.inner;
      T* dst = dx + (o * l.extent + IndexAt(index, j)) * l.inner;
      for (int64_t i = 0; i < l.inner; ++i) dst[i] += src[i];
    }
  }
  return Status::Ok();
}

// ---- expand_v2 --------------------------------------------------------------
// Out is the full tensor of a broadcast map whose small operand is X (its
// dims padded with leading 1s): Out[i] = X[map(i)].

Status ExpandMap(const KernelContext& ctx, const Dims& x, const Dims& out,
                 cpu::BroadcastMap* map) {
  int64_t extents[cpu::BroadcastMap::kMaxRank];
  const bool fits =
      out.size() <= cpu::BroadcastMap::kMaxRank && x.size() <= out.size();
  const size_t lead = fits ? out.size() - x.size() : 0;
  for (size_t d = 0; fits && d < out.size(); ++d)
    extents[d] = d < lead ? 1 : x[d - lead];
  if (!fits || !map->Init(out, extents)) {
    return ctx.Error("X " + DimsToString(x) + " does not expand to " +
                     DimsToString(out));
  }
  return Status::Ok();
}

template <typename T>
Status ExpandKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor& x = *ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  cpu::BroadcastMap map;
  PAREX_RETURN_IF_ERROR(ExpandMap(ctx, x.dims(), out->dims(), &map));
  const T* xd = x.data<T>();
  T* od = out->data<T>();
  map.ForEach([&](int64_t full, int64_t small) { od[full] = xd[small]; });
  return Status::Ok();
}

template <typename T>
Status ExpandGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Out@GRAD"}));
  const Tensor& dout = *ctx.Input("Out@GRAD");
  Tensor* dx_t = ctx.Output("X@GRAD");
  cpu::BroadcastMap map;
  PAREX_RETURN_IF_ERROR(ExpandMap(ctx, dx_t->dims(), dout.dims(), &map));
  const T* dd = dout.data<T>();
  T* dx = dx_t->data<T>();
  std::fill(dx, dx + dx_t->numel(), T(0));
  map.ForEach([&](int64_t full, int64_t small) { dx[small] += dd[full]; });
  return Status::Ok();
}

// ---- where ------------------------------------------------------------------

template <typename T>
Status WhereKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Y"}));
  const bool* cond = ctx.Input("Condition")->data<bool>();
  const T* x = ctx.Input("X")->data<T>();
  const T* y = ctx.Input("Y")->data<T>();
  Tensor* out = ctx.Output("Out");
  T* od = out->data<T>();
  for (int64_t i = 0, n = out->numel(); i < n; ++i)
    od[i] = cond[i] ? x[i] : y[i];
  return Status::Ok();
}

// X@GRAD = Condition ? Out@GRAD : 0 and Y@GRAD the other way round, each
// only when named.
template <typename T>
Status WhereGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Out@GRAD"}));
  const bool* cond = ctx.Input("Condition")->data<bool>();
  const Tensor& dout_t = *ctx.Input("Out@GRAD");
  const T* dout = dout_t.data<T>();
  const int64_t n = dout_t.numel();
  auto fill = [&](const char* slot, bool when) {
    if (ctx.OutputVar(slot) == nullptr) return;
    T* d = ctx.Output(slot)->template data<T>();
    for (int64_t i = 0; i < n; ++i) d[i] = cond[i] == when ? dout[i] : T(0);
  };
  fill("X@GRAD", true);
  fill("Y@GRAD", false);
  return Status::Ok();
}

}  // namespace

void RegisterTensorKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "stack", StackKernel, float, double, int32_t, int64_t,
                   bool);
  PAREX_CPU_KERNEL(r, "stack_grad", StackGradKernel, float, double, int32_t,
                   int64_t);
  PAREX_CPU_KERNEL(r, "gather", GatherKernel, float, double, int32_t, int64_t,
                   uint8_t, bool);
  PAREX_CPU_KERNEL(r, "gather_grad", GatherGradKernel, float, double, int32_t,
                   int64_t);
  PAREX_CPU_KERNEL(r, "expand_v2", ExpandKernel, float, double, int32_t,
                   int64_t, bool);
  PAREX_CPU_KERNEL(r, "expand_v2_grad", ExpandGradKernel, float, double,
                   int32_t, int64_t);
  PAREX_CPU_KERNEL(r, "where", WhereKernel, float, double, int32_t, int64_t);
  PAREX_CPU_KERNEL(r, "where_grad", WhereGradKernel, float, double, int32_t,
                   int64_t);
}

}  // namespace parex
