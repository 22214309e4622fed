// top_k, top_k_grad, accuracy, arg_max and one_hot_v2 on CPU. Semantics:
// graph/ir/ops/metric_ops.cc.
#include <algorithm>
#include <initializer_list>
#include <string>

#include "kernels/cpu/cpu_kernels.h"

namespace parex {
namespace {

// `slot` is bound to an int64 tensor.
Status CheckInt64(const KernelContext& ctx, const char* slot) {
  const Tensor* t = ctx.Input(slot);
  if (t == nullptr || t->dtype() != DType::kInt64) {
    return ctx.Error(std::string(slot) + " must be an int64 tensor");
  }
  return Status::Ok();
}

// Per row of X [rows, n]: the k largest values in descending order, ties
// broken by the lower index. Index buffers of a row live in Indices itself,
// so the kernel allocates nothing.
template <typename T>
Status TopKKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor* x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  Tensor* indices = ctx.Output("Indices");
  const int64_t k = ctx.Attr<int>("k");
  const int64_t n = x->rank() > 0 ? x->dims().back() : 1;
  if (k < 1 || k > n) {
    return ctx.Error("k = " + std::to_string(k) + " is outside [1, " +
                     std::to_string(n) + "]");
  }
  const int64_t rows = n > 0 ? x->numel() / n : 0;
  const T* xd = x->data<T>();
  T* od = out->data<T>();
  int64_t* id = indices->data<int64_t>();
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = xd + r * n;
    int64_t* best = id + r * k;
    // Insertion into the sorted top-k so far: O(n k), small k is the norm.
    int64_t size = 0;
    for (int64_t j = 0; j < n; ++j) {
      // Strictly greater moves ahead, so an equal value keeps its lower
      // index first.
      int64_t pos = size;
      while (pos > 0 && row[j] > row[best[pos - 1]]) --pos;
      if (pos >= k) continue;
      const int64_t end = std::min(size, k - 1);
      for (int64_t m = end; m > pos; --m) best[m] = best[m - 1];
      best[pos] = j;
      size = std::min(size + 1, k);
    }
    for (int64_t m = 0; m < k; ++m) od[r * k + m] = row[best[m]];
  }
  return Status::Ok();
}

// X@GRAD is zero except at the selected indices, which receive Out@GRAD.
template <typename T>
Status TopKGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Out@GRAD"}));
  PAREX_RETURN_IF_ERROR(CheckInt64(ctx, "Indices"));
  const Tensor* x = ctx.Input("X");
  const Tensor* indices = ctx.Input("Indices");
  const Tensor* dout = ctx.Input("Out@GRAD");
  Tensor* dx = ctx.Output("X@GRAD");
  const int64_t n = x->rank() > 0 ? x->dims().back() : 1;
  const int64_t k = indices->rank() > 0 ? indices->dims().back() : 1;
  const int64_t rows = n > 0 ? x->numel() / n : 0;
  if (indices->numel() != rows * k || dout->numel() != indices->numel()) {
    return ctx.Error("Indices " + DimsToString(indices->dims()) +
                     " and Out@GRAD " + DimsToString(dout->dims()) +
                     " do not match X " + DimsToString(x->dims()));
  }
  const int64_t* id = indices->data<int64_t>();
  const T* g = dout->data<T>();
  T* dxd = dx->data<T>();
  std::fill(dxd, dxd + x->numel(), T(0));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t m = 0; m < k; ++m) {
      const int64_t j = id[r * k + m];
      if (j < 0 || j >= n) {
        return ctx.Error("index " + std::to_string(j) + " is outside [0, " +
                         std::to_string(n) + ")");
      }
      dxd[r * n + j] += g[r * k + m];
    }
  }
  return Status::Ok();
}

// A row is correct when any of its k indices equals its label.
// Accuracy = Correct / Total (0 for no rows).
template <typename T>
Status AccuracyKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(CheckInt64(ctx, "Indices"));
  PAREX_RETURN_IF_ERROR(CheckInt64(ctx, "Label"));
  const Tensor* indices = ctx.Input("Indices");
  const Tensor* label = ctx.Input("Label");
  if (indices->rank() != 2) return ctx.Error("Indices must have rank 2");
  const int64_t rows = indices->dim(0);
  const int64_t k = indices->dim(1);
  if (label->numel() != rows) {
    return ctx.Error("Label has " + std::to_string(label->numel()) +
                     " rows, Indices " + std::to_string(rows));
  }
  const int64_t* id = indices->data<int64_t>();
  const int64_t* ld = label->data<int64_t>();
  int64_t correct = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t m = 0; m < k; ++m) {
      if (id[r * k + m] == ld[r]) {
        ++correct;
        break;
      }
    }
  }
  ctx.Output("Accuracy")->data<float>()[0] =
      rows > 0 ? static_cast<float>(correct) / static_cast<float>(rows) : 0.f;
  ctx.Output("Correct")->data<int32_t>()[0] = static_cast<int32_t>(correct);
  ctx.Output("Total")->data<int32_t>()[0] = static_cast<int32_t>(rows);
  return Status::Ok();
}

// ---- arg_max ----------------------------------------------------------------

template <typename T, typename Index>
void ArgMax(const T* x, Index* out, int64_t outer, int64_t extent, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T* row = x + o * extent * inner + i;
      int64_t best = 0;
      for (int64_t k = 1; k < extent; ++k) {
        if (row[k * inner] > row[best * inner]) best = k;
      }
      out[o * inner + i] = static_cast<Index>(best);
    }
  }
}

// X viewed as [outer, extent, inner] around `axis` (flatten: [1, numel, 1]).
template <typename T>
Status ArgMaxKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor& x = *ctx.Input("X");
  if (x.numel() == 0) return ctx.Error("X " + DimsToString(x.dims()) + " holds no element");
  int64_t outer = 1, extent = x.numel(), inner = 1;
  if (!ctx.Attr<bool>("flatten")) {
    const int rank = x.rank();
    int64_t axis = ctx.Attr<int64_t>("axis");  // in range: the schema checked it
    if (axis < 0) axis += rank;
    outer = extent = inner = 1;
    for (int d = 0; d < rank; ++d) (d < axis ? outer : d == axis ? extent : inner) *= x.dims()[d];
  }
  Tensor* out = ctx.Output("Out");
  if (out->dtype() == DType::kInt32) {
    ArgMax(x.data<T>(), out->data<int32_t>(), outer, extent, inner);
  } else {
    ArgMax(x.data<T>(), out->data<int64_t>(), outer, extent, inner);
  }
  return Status::Ok();
}

// ---- one_hot_v2 --------------------------------------------------------------

template <typename Index, typename T>
Status OneHot(const KernelContext& ctx, const Tensor& x, Tensor* out) {
  const int64_t depth = ctx.Attr<int>("depth");
  const bool allow = ctx.Attr<bool>("allow_out_of_range");
  const Index* in = x.data<Index>();
  T* od = out->data<T>();
  std::fill(od, od + out->numel(), T(0));
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t v = in[i];
    if (v >= 0 && v < depth) {
      od[i * depth + v] = T(1);
    } else if (!allow) {
      return ctx.Error("X[" + std::to_string(i) + "] = " + std::to_string(v) +
                       " is outside [0, depth " + std::to_string(depth) +
                       ") (allow_out_of_range is false)");
    }
  }
  return Status::Ok();
}

// Chosen by X's dtype (the index type); Out's dtype is the attribute's.
template <typename Index>
Status OneHotKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<Index>({"X"}));
  const Tensor& x = *ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  switch (out->dtype()) {
    case DType::kFP32: return OneHot<Index, float>(ctx, x, out);
    case DType::kFP64: return OneHot<Index, double>(ctx, x, out);
    case DType::kInt32: return OneHot<Index, int32_t>(ctx, x, out);
    case DType::kInt64: return OneHot<Index, int64_t>(ctx, x, out);
    default:
      return ctx.Error(std::string("Out cannot be ") + DTypeName(out->dtype()));
  }
}

}  // namespace

void RegisterMetricKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "top_k", TopKKernel, float, double);
  PAREX_CPU_KERNEL(r, "top_k_grad", TopKGradKernel, float, double);
  PAREX_CPU_KERNEL(r, "accuracy", AccuracyKernel, float, double);
  PAREX_CPU_KERNEL(r, "arg_max", ArgMaxKernel, float, double, int32_t, int64_t);
  PAREX_CPU_KERNEL(r, "one_hot_v2", OneHotKernel, int32_t, int64_t);
}

}  // namespace parex
