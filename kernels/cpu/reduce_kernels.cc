// mean, reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod,
// logsumexp, their gradients, sum, and cumsum with its gradient on CPU.
// Reductions pair X (full) with Out viewed with X's rank and 1s on the
// reduced dims (kernels/cpu/broadcast.h); removing those 1s (keep_dim false)
// does not move any element, so the same map serves both layouts.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/reduce_map.h"

namespace parex {
namespace {

using cpu::BroadcastMap;
using cpu::BuildReduceMap;

template <typename T>
Status MeanKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor* x = ctx.Input("X");
  const T* xd = x->data<T>();
  double sum = 0;
  for (int64_t i = 0, i_end = x->numel(); i < i_end; ++i) sum += xd[i];
  // An empty X gives NaN, as in Paddle.
  ctx.Output("Out")->data<T>()[0] = static_cast<T>(sum / x->numel());
  return Status::Ok();
}

template <typename T>
Status MeanGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Out@GRAD"}));
  const Tensor* x = ctx.Input("X");
  const T g = ctx.Input("Out@GRAD")->data<T>()[0] / static_cast<T>(x->numel());
  T* dx = ctx.Output("X@GRAD")->data<T>();
  std::fill(dx, dx + x->numel(), g);
  return Status::Ok();
}

// Out = sum (or mean) of X over the map's broadcast dims, accumulated in U.
template <typename T, typename U>
Status Reduce(const KernelContext& ctx, const BroadcastMap& map, const T* x,
              Tensor* out, bool mean) {
  U* od = out->data<U>();
  std::fill(od, od + map.small_numel(), U(0));
  map.ForEach([&](int64_t i, int64_t j) { od[j] += static_cast<U>(x[i]); });
  if (!mean || map.small_numel() == 0) return Status::Ok();
  const int64_t count = map.full_numel() / map.small_numel();
  if (std::is_integral_v<U> && count == 0) {
    return ctx.Error("mean over an empty dim");
  }
  for (int64_t j = 0, j_end = map.small_numel(); j < j_end; ++j)
    od[j] /= static_cast<U>(count);
  return Status::Ok();
}

template <typename T, bool kMean>
Status ReduceKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor* x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  BroadcastMap map;
  PAREX_RETURN_IF_ERROR(BuildReduceMap(ctx, x->dims(), &map));
  if (map.small_numel() != out->numel()) {
    return ctx.Error("Out " + DimsToString(out->dims()) +
                     " does not hold the reduction of X " +
                     DimsToString(x->dims()));
  }
  const T* xd = x->data<T>();
  switch (out->dtype()) {
    case DType::kFP32:
      return Reduce<T, float>(ctx, map, xd, out, kMean);
    case DType::kFP64:
      return Reduce<T, double>(ctx, map, xd, out, kMean);
    case DType::kInt32:
      return Reduce<T, int32_t>(ctx, map, xd, out, kMean);
    case DType::kInt64:
      return Reduce<T, int64_t>(ctx, map, xd, out, kMean);
    default:
      return ctx.Error(std::string("unsupported output dtype ") +
                       DTypeName(out->dtype()));
  }
}

// X@GRAD[i] = Out@GRAD[j] (/ the number of elements reduced into j).
template <typename T, bool kMean>
Status ReduceGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Out@GRAD"}));
  const Tensor* x = ctx.Input("X");
  const Tensor* dout = ctx.Input("Out@GRAD");
  BroadcastMap map;
  PAREX_RETURN_IF_ERROR(BuildReduceMap(ctx, x->dims(), &map));
  if (map.small_numel() != dout->numel()) {
    return ctx.Error("Out@GRAD " + DimsToString(dout->dims()) +
                     " does not hold the reduction of X " +
                     DimsToString(x->dims()));
  }
  const T scale =
      kMean && map.small_numel() > 0
          ? T(1) / static_cast<T>(map.full_numel() / map.small_numel())
          : T(1);
  const T* g = dout->data<T>();
  T* dx = ctx.Output("X@GRAD")->data<T>();
  map.ForEach([&](int64_t i, int64_t j) { dx[i] = g[j] * scale; });
  return Status::Ok();
}

enum class Extreme { kMax, kMin, kProd };

// Out = max, min or product of X over the reduced dims, in X's dtype.
template <typename T, Extreme K>
Status ExtremeKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor* x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  BroadcastMap map;
  PAREX_RETURN_IF_ERROR(BuildReduceMap(ctx, x->dims(), &map));
  if (map.small_numel() != out->numel() || out->dtype() != x->dtype()) {
    return ctx.Error("Out " + out->DebugString() +
                     " does not hold the reduction of X " + x->DebugString());
  }
  const T init = K == Extreme::kMax   ? std::numeric_limits<T>::lowest()
                 : K == Extreme::kMin ? std::numeric_limits<T>::max()
                                      : T(1);
  T* od = out->data<T>();
  const T* xd = x->data<T>();
  std::fill(od, od + map.small_numel(), init);
  map.ForEach([&](int64_t i, int64_t j) {
    if constexpr (K == Extreme::kMax) {
      od[j] = std::max(od[j], xd[i]);
    } else if constexpr (K == Extreme::kMin) {
      od[j] = std::min(od[j], xd[i]);
    } else {
      od[j] *= xd[i];
    }
  });
  return Status::Ok();
}

// Paddle's gradients: for max and min, Out@GRAD to every element equal to
// the extreme (ties each get all of it); for prod, Out@GRAD * Out / X.
template <typename T, Extreme K>
Status ExtremeGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Out", "Out@GRAD"}));
  const Tensor* x = ctx.Input("X");
  const Tensor* out = ctx.Input("Out");
  const Tensor* dout = ctx.Input("Out@GRAD");
  BroadcastMap map;
  PAREX_RETURN_IF_ERROR(BuildReduceMap(ctx, x->dims(), &map));
  if (map.small_numel() != dout->numel() || map.small_numel() != out->numel()) {
    return ctx.Error("Out " + DimsToString(out->dims()) + " and Out@GRAD " +
                     DimsToString(dout->dims()) +
                     " do not hold the reduction of X " +
                     DimsToString(x->dims()));
  }
  const T* xd = x->data<T>();
  const T* od = out->data<T>();
  const T* g = dout->data<T>();
  T* dx = ctx.Output("X@GRAD")->data<T>();
  map.ForEach([&](int64_t i, int64_t j) {
    if constexpr (K == Extreme::kProd) {
      dx[i] = g[j] * od[j] / xd[i];
    } else {
      dx[i] = xd[i] == od[j] ? g[j] : T(0);
    }
  });
  return Status::Ok();
}

// logsumexp: max + log(sum(exp(x - max))) over the reduced dims, as Paddle.
template <typename T>
Status LogsumexpKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor* x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  BroadcastMap map;
  PAREX_RETURN_IF_ERROR(BuildReduceMap(ctx, x->dims(), &map, "axis"));
  if (map.small_numel() != out->numel()) {
    return ctx.Error("Out " + DimsToString(out->dims()) +
                     " does not hold the reduction of X " +
                     DimsToString(x->dims()));
  }
  const T* xd = x->data<T>();
  T* od = out->data<T>();
  std::vector<T> max(map.small_numel(), -std::numeric_limits<T>::infinity());
  map.ForEach([&](int64_t i, int64_t j) { max[j] = std::max(max[j], xd[i]); });
  std::fill(od, od + map.small_numel(), T(0));
  map.ForEach([&](int64_t i, int64_t j) { od[j] += std::exp(xd[i] - max[j]); });
  for (int64_t j = 0; j < map.small_numel(); ++j) {
    od[j] = std::log(od[j]) + max[j];
  }
  return Status::Ok();
}

// dX = dOut * exp(X - Out).
template <typename T>
Status LogsumexpGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Out", "Out@GRAD"}));
  const Tensor* x = ctx.Input("X");
  const Tensor* out = ctx.Input("Out");
  const Tensor* dout = ctx.Input("Out@GRAD");
  BroadcastMap map;
  PAREX_RETURN_IF_ERROR(BuildReduceMap(ctx, x->dims(), &map, "axis"));
  if (map.small_numel() != out->numel() || map.small_numel() != dout->numel()) {
    return ctx.Error("Out and Out@GRAD do not hold the reduction of X " +
                     DimsToString(x->dims()));
  }
  const T* xd = x->data<T>();
  const T* od = out->data<T>();
  const T* g = dout->data<T>();
  T* dx = ctx.Output("X@GRAD")->data<T>();
  map.ForEach(
      [&](int64_t i, int64_t j) { dx[i] = g[j] * std::exp(xd[i] - od[j]); });
  return Status::Ok();
}

template <Extreme K>
void RegisterExtreme(KernelRegistry* r, const std::string& type) {
  RegisterCpuKernel<float, double, int32_t, int64_t>(r, type, [](auto tag) {
    return &ExtremeKernel<typename decltype(tag)::type, K>;
  });
  RegisterCpuKernel<float, double>(r, type + "_grad", [](auto tag) {
    return &ExtremeGradKernel<typename decltype(tag)::type, K>;
  });
}

// Out = sum of the non-empty X. Out may be one of the X (gradient
// accumulation in place): each block of elements is summed from every input
// before it is written.
// Inputs holding sparse rows (a sparse gradient accumulated): their dense
// sums first, in a buffer the op keeps, then Out (allocated here: shape
// inference left it, as Out may be one of those inputs).
struct SparseSumState : KernelState {
  std::vector<Tensor> dense;
};

template <typename T>
Status SparseSum(KernelContext& ctx) {
  const int count = ctx.InputCount("X");
  std::vector<Tensor>& dense = ctx.State<SparseSumState>()->dense;
  dense.resize(count);
  Dims dims;
  for (int k = 0; k < count; ++k) {
    const Variable* v = ctx.InputVar("X", k);
    const SelectedRows* rows = v != nullptr ? v->GetSelectedRows() : nullptr;
    const Tensor* t = v != nullptr ? v->GetTensor() : nullptr;
    if (rows != nullptr) {
      // Never into a buffer a variable shares (an earlier run's dense input).
      if (dense[k].buffer_holders() > 1) dense[k] = Tensor();
      PAREX_RETURN_IF_ERROR(
          rows->ToDense(&dense[k]).WithContext(ctx.op().Label()));
    } else if (t != nullptr && t->defined()) {
      dense[k].ShareDataWith(*t);  // read before Out is written: see below
    } else {
      return ctx.Error("input X[" + std::to_string(k) + "] holds no value");
    }
    if (dense[k].dtype() != DTypeOf<T>() ||
        (k > 0 && dense[k].dims() != dims)) {
      return ctx.Error("input X[" + std::to_string(k) + "] " +
                       dense[k].DebugString() + " does not match X[0]");
    }
    dims = dense[k].dims();
  }
  // A dense input that Out overwrites is copied first.
  Variable* out_var = ctx.OutputVar("Out");
  for (int k = 0; k < count; ++k) {
    if (ctx.InputVar("X", k) == out_var && out_var->GetTensor() != nullptr) {
      dense[k] = dense[k].Clone();
    }
  }
  Tensor* out = out_var->GetMutableTensor();
  PAREX_RETURN_IF_ERROR(out->TryAllocate(DTypeOf<T>(), dims, ctx.place()));
  T* od = out->data<T>();
  std::fill(od, od + out->numel(), T(0));
  for (const Tensor& x : dense) {
    const T* xd = x.data<T>();
    for (int64_t i = 0; i < out->numel(); ++i) od[i] += xd[i];
  }
  return Status::Ok();
}

template <typename T>
Status SumKernel(KernelContext& ctx) {
  for (int k = 0; k < ctx.InputCount("X"); ++k) {
    const Variable* v = ctx.InputVar("X", k);
    if (v != nullptr && v->IsSelectedRows()) return SparseSum<T>(ctx);
  }
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  Tensor* out = ctx.Output("Out");
  const int64_t n = out->numel();
  const int count = ctx.InputCount("X");
  for (int k = 0; k < count; ++k) {
    const int64_t m = ctx.Input("X", k)->numel();
    if (m != 0 && m != n) {
      return ctx.Error("input X[" + std::to_string(k) + "] has " +
                       std::to_string(m) + " elements, Out has " +
                       std::to_string(n));
    }
  }
  T* od = out->data<T>();
  constexpr int64_t kBlock = 256;
  T acc[kBlock];
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    const int64_t len = std::min(kBlock, n - begin);
    std::fill(acc, acc + len, T(0));
    for (int k = 0; k < count; ++k) {
      const Tensor* x = ctx.Input("X", k);
      if (x->numel() == 0) continue;
      const T* xd = x->data<T>() + begin;
      for (int64_t i = 0; i < len; ++i) acc[i] += xd[i];
    }
    std::copy(acc, acc + len, od + begin);
  }
  return Status::Ok();
}

// ---- cumsum -----------------------------------------------------------------
// X viewed as [outer, extent, inner] around the scanned axis (with flatten:
// [1, numel, 1]).

struct ScanLayout {
  int64_t outer = 1, extent = 1, inner = 1;
};

ScanLayout ScanLayoutOf(const KernelContext& ctx, const Dims& x) {
  ScanLayout l;
  if (ctx.Attr<bool>("flatten")) {
    l.extent = Numel(x);
    return l;
  }
  const int rank = static_cast<int>(x.size());
  int axis = ctx.Attr<int>("axis");  // in range: the schema checked it
  if (axis < 0) axis += rank;
  for (int d = 0; d < rank; ++d) {
    (d < axis ? l.outer : d == axis ? l.extent : l.inner) *= x[d];
  }
  return l;
}

// out = the running sums of `in` along the layout's extent, from the end
// when `reverse`; `exclusive` leaves each element out of its own sum.
template <typename T>
void Scan(const T* in, T* out, const ScanLayout& l, bool exclusive,
          bool reverse) {
  for (int64_t o = 0; o < l.outer; ++o) {
    for (int64_t i = 0; i < l.inner; ++i) {
      const int64_t base = o * l.extent * l.inner + i;
      T sum = T(0);
      for (int64_t k = 0; k < l.extent; ++k) {
        const int64_t at = base + (reverse ? l.extent - 1 - k : k) * l.inner;
        const T v = in[at];
        if (!exclusive) sum += v;
        out[at] = sum;
        if (exclusive) sum += v;
      }
    }
  }
}

template <typename T>
Status CumsumKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor& x = *ctx.Input("X");
  Scan(x.data<T>(), ctx.Output("Out")->data<T>(), ScanLayoutOf(ctx, x.dims()),
       ctx.Attr<bool>("exclusive"), ctx.Attr<bool>("reverse"));
  return Status::Ok();
}

// X@GRAD[j] sums Out@GRAD[k] over the k whose sum took X[j]: the same scan
// the other way round.
template <typename T>
Status CumsumGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Out@GRAD"}));
  Tensor* dx = ctx.Output("X@GRAD");
  Scan(ctx.Input("Out@GRAD")->data<T>(), dx->data<T>(),
       ScanLayoutOf(ctx, dx->dims()), ctx.Attr<bool>("exclusive"),
       !ctx.Attr<bool>("reverse"));
  return Status::Ok();
}

// Registers ReduceKernel<T, kMean> for each T as `type` and
// ReduceGradKernel<T, kMean> for float and double as `type`_grad.
template <bool kMean, typename... Ts>
void RegisterReduce(KernelRegistry* r, const std::string& type) {
  RegisterCpuKernel<Ts...>(r, type, [](auto tag) {
    return &ReduceKernel<typename decltype(tag)::type, kMean>;
  });
  RegisterCpuKernel<float, double>(r, type + "_grad", [](auto tag) {
    return &ReduceGradKernel<typename decltype(tag)::type, kMean>;
  });
}

}  // namespace

void RegisterReduceKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "mean", MeanKernel, float, double);
  PAREX_CPU_KERNEL(r, "mean_grad", MeanGradKernel, float, double);
  RegisterReduce<false, float, double, int32_t, int64_t>(r, "reduce_sum");
  RegisterReduce<true, float, double>(r, "reduce_mean");
  RegisterExtreme<Extreme::kMax>(r, "reduce_max");
  RegisterExtreme<Extreme::kMin>(r, "reduce_min");
  RegisterExtreme<Extreme::kProd>(r, "reduce_prod");
  PAREX_CPU_KERNEL(r, "logsumexp", LogsumexpKernel, float, double);
  PAREX_CPU_KERNEL(r, "logsumexp_grad", LogsumexpGradKernel, float, double);
  PAREX_CPU_KERNEL(r, "sum", SumKernel, float, double, int32_t, int64_t);
  PAREX_CPU_KERNEL(r, "cumsum", CumsumKernel, float, double, int32_t, int64_t);
  PAREX_CPU_KERNEL(r, "cumsum_grad", CumsumGradKernel, float, double);
}

}  // namespace parex
