// Norms and amax on CPU: p_norm (Paddle's vector p-norm along one axis, or
// over all elements with asvector), frobenius_norm (over reduce dims) and
// reduce_amax (max whose gradient splits evenly among tied maxima), with
// their gradients as Paddle 2.6 computes them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/reduce_map.h"

namespace parex {
namespace {

using cpu::BroadcastMap;
using cpu::BuildReduceMap;

// p_norm's map: along `axis`, or every element when asvector.
Status PNormMap(const KernelContext& ctx, const Dims& x, BroadcastMap* map) {
  const int rank = static_cast<int>(x.size());
  if (rank > BroadcastMap::kMaxRank) return ctx.Error("rank too high");
  int axis = ctx.Attr<int>("axis");
  const bool all = ctx.Attr<bool>("asvector");
  if (!all && (axis < -rank || axis >= rank)) {
    return ctx.Error("axis " + std::to_string(axis) +
                     " is out of range for X of rank " + std::to_string(rank));
  }
  if (axis < 0) axis += rank;
  int64_t small[BroadcastMap::kMaxRank];
  for (int d = 0; d < rank; ++d) small[d] = all || d == axis ? 1 : x[d];
  if (!map->Init(x, small)) return ctx.Error("bad dims");
  return Status::Ok();
}

// What a reduction's gradient reads and writes, checked: Out and Out@GRAD
// hold the reduction of X under `build`'s map.
template <typename T>
struct ReduceGrad {
  BroadcastMap map;
  const T* x = nullptr;
  const T* out = nullptr;
  const T* g = nullptr;
  T* dx = nullptr;
};

template <typename T, typename BuildMap>
StatusOr<ReduceGrad<T>> ReduceGradOf(KernelContext& ctx, BuildMap build) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Out", "Out@GRAD"}));
  const Tensor* x = ctx.Input("X");
  const Tensor* out = ctx.Input("Out");
  const Tensor* dout = ctx.Input("Out@GRAD");
  ReduceGrad<T> r;
  PAREX_RETURN_IF_ERROR(build(ctx, x->dims(), &r.map));
  if (out->numel() != r.map.small_numel() ||
      dout->numel() != r.map.small_numel()) {
    return ctx.Error("Out " + DimsToString(out->dims()) + " and Out@GRAD " +
                     DimsToString(dout->dims()) +
                     " do not hold the reduction of X " +
                     DimsToString(x->dims()));
  }
  r.x = x->data<T>();
  r.out = out->data<T>();
  r.g = dout->data<T>();
  r.dx = ctx.Output("X@GRAD")->data<T>();
  return r;
}

// Out[j] = `combine` folded over the X elements `build`'s map sends to j,
// from `init`; Out is checked to hold the reduction first.
template <typename T, typename BuildMap, typename Combine>
StatusOr<Tensor*> Fold(KernelContext& ctx, BuildMap build, T init,
                       Combine combine) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor* x = ctx.Input("X");
  BroadcastMap map;
  PAREX_RETURN_IF_ERROR(build(ctx, x->dims(), &map));
  Tensor* out = ctx.Output("Out");
  if (out->numel() != map.small_numel()) {
    return ctx.Error("Out " + DimsToString(out->dims()) +
                     " does not hold the reduction of X " +
                     DimsToString(x->dims()));
  }
  const T* xd = x->data<T>();
  T* od = out->data<T>();
  std::fill_n(od, out->numel(), init);
  map.ForEach([&](int64_t i, int64_t j) { od[j] = combine(od[j], xd[i]); });
  return out;
}

Status ReduceMapOf(const KernelContext& ctx, const Dims& x, BroadcastMap* map) {
  return BuildReduceMap(ctx, x, map);
}

StatusOr<double> Porder(const KernelContext& ctx) {
  const double p = ctx.Attr<float>("porder");
  if (!std::isfinite(p) || p == 0) {
    return ctx.Error("porder " + std::to_string(p) +
                     " is not supported (finite and nonzero only)");
  }
  return p;
}

template <typename T>
Status PNormKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(const double p, Porder(ctx));
  const T tp = static_cast<T>(p);
  PAREX_ASSIGN_OR_RETURN(Tensor * out,
                         Fold<T>(ctx, PNormMap, T(0), [tp](T acc, T x) {
                           return acc + std::pow(std::abs(x), tp);
                         }));
  // As phi: the root's exponent is a float 1 / porder, also for double.
  const T root = static_cast<T>(1.0f / static_cast<float>(p));
  T* od = out->data<T>();
  for (int64_t j = 0; j < out->numel(); ++j) od[j] = std::pow(od[j], root);
  return Status::Ok();
}

// dX = sign(x) |x|^(p-1) dOut / max(Out, epsilon)^(p-1).
template <typename T>
Status PNormGradKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(const double p, Porder(ctx));
  PAREX_ASSIGN_OR_RETURN(ReduceGrad<T> r, ReduceGradOf<T>(ctx, PNormMap));
  const T tp = static_cast<T>(p);
  const T eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  r.map.ForEach([&](int64_t i, int64_t j) {
    const T x = r.x[i];
    const T sign = x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0));
    r.dx[i] = sign * std::pow(std::abs(x), tp - T(1)) * r.g[j] /
              std::pow(std::max(r.out[j], eps), tp - T(1));
  });
  return Status::Ok();
}

template <typename T>
Status FrobeniusNormKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(
      Tensor * out,
      Fold<T>(ctx, ReduceMapOf, T(0), [](T acc, T x) { return acc + x * x; }));
  T* od = out->data<T>();
  for (int64_t j = 0; j < out->numel(); ++j) od[j] = std::sqrt(od[j]);
  return Status::Ok();
}

// dX = dOut * X / Out.
template <typename T>
Status FrobeniusNormGradKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(ReduceGrad<T> r, ReduceGradOf<T>(ctx, ReduceMapOf));
  r.map.ForEach(
      [&](int64_t i, int64_t j) { r.dx[i] = r.g[j] * r.x[i] / r.out[j]; });
  return Status::Ok();
}

template <typename T>
Status AmaxKernel(KernelContext& ctx) {
  return Fold<T>(ctx, ReduceMapOf, std::numeric_limits<T>::lowest(),
                 [](T acc, T x) { return std::max(acc, x); })
      .status();
}

// amax's gradient: dOut split evenly among the elements equal to the max.
template <typename T>
Status AmaxGradKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(ReduceGrad<T> r, ReduceGradOf<T>(ctx, ReduceMapOf));
  std::vector<T> count(r.map.small_numel(), T(0));
  r.map.ForEach([&](int64_t i, int64_t j) {
    if (r.x[i] == r.out[j]) count[j] += T(1);
  });
  r.map.ForEach([&](int64_t i, int64_t j) {
    r.dx[i] = r.x[i] == r.out[j] ? r.g[j] / count[j] : T(0);
  });
  return Status::Ok();
}

}  // namespace

void RegisterNormKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "p_norm", PNormKernel, float, double);
  PAREX_CPU_KERNEL(r, "p_norm_grad", PNormGradKernel, float, double);
  PAREX_CPU_KERNEL(r, "frobenius_norm", FrobeniusNormKernel, float, double);
  PAREX_CPU_KERNEL(r, "frobenius_norm_grad", FrobeniusNormGradKernel, float,
                   double);
  PAREX_CPU_KERNEL(r, "reduce_amax", AmaxKernel, float, double, int32_t,
                   int64_t);
  PAREX_CPU_KERNEL(r, "reduce_amax_grad", AmaxGradKernel, float, double);
}

}  // namespace parex
