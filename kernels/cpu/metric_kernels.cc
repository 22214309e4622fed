// top_k, top_k_grad, accuracy, arg_max and one_hot_v2 on CPU. Semantics:
// graph/ir/ops/metric_ops.cc.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "graph/ir/spec/value_inputs.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/runtime_shape_context.h"
#include "kernels/topk_order.h"

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

// X viewed as [outer, n, inner] around the op's axis: top_k's is the last
// dim (inner 1); top_k_v2's is its `axis` attribute.
struct TopKShape {
  int64_t outer = 1, n = 1, inner = 1;
};

StatusOr<TopKShape> TopKAxis(const KernelContext& ctx, const Dims& x) {
  TopKShape s;
  if (x.empty()) return s;
  int64_t axis = static_cast<int64_t>(x.size()) - 1;
  if (ctx.op().type() == "top_k_v2" || ctx.op().type() == "top_k_v2_grad") {
    axis = ctx.Attr<int>("axis");
    if (axis < 0) axis += static_cast<int64_t>(x.size());
    if (axis < 0 || axis >= static_cast<int64_t>(x.size())) {
      return ctx.Error("axis " + std::to_string(ctx.Attr<int>("axis")) +
                       " is outside X " + DimsToString(x));
    }
  }
  for (int64_t d = 0; d < axis; ++d) s.outer *= x[d];
  s.n = x[axis];
  for (size_t d = axis + 1; d < x.size(); ++d) s.inner *= x[d];
  return s;
}

// Along the axis of every [outer, inner] position: the k largest (or, with
// top_k_v2's largest = false, smallest) values in that order. top_k breaks
// ties by the lower index; top_k_v2 leaves them where Paddle's does
// (PaddleTopKRow). Out and Indices are [outer, k, inner].
template <typename T>
Status TopKKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor* x = ctx.Input("X");
  PAREX_ASSIGN_OR_RETURN(const TopKShape s, TopKAxis(ctx, x->dims()));
  int64_t k = ctx.Attr<int>("k");
  if (ctx.InputCount("K") > 0) {  // top_k_v2's K tensor, as the shape rule
    PAREX_ASSIGN_OR_RETURN(
        k, IntFromInputOrAttr(RuntimeShapeContext(ctx), "K", k));
  }
  if (k < 1 || k > s.n) {
    return ctx.Error("k = " + std::to_string(k) + " is outside [1, " +
                     std::to_string(s.n) + "]");
  }
  const bool v2 = ctx.op().type() == "top_k_v2";
  const bool largest = !v2 || ctx.Attr<bool>("largest");
  const bool sorted = !v2 || ctx.Attr<bool>("sorted");
  const T* xd = x->data<T>();
  T* od = ctx.Output("Out")->data<T>();
  int64_t* id = ctx.Output("Indices")->data<int64_t>();
  thread_local std::vector<std::pair<T, int64_t>> pairs;
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      const T* row = xd + o * s.n * s.inner + i;  // element j at row[j * inner]
      const int64_t base = o * k * s.inner + i;   // slot m at base + m * inner
      auto at = [&](int64_t m) -> int64_t& { return id[base + m * s.inner]; };
      if (v2) {
        pairs.clear();
        for (int64_t j = 0; j < s.n; ++j)
          pairs.emplace_back(row[j * s.inner], j);
        PaddleTopKRow(&pairs, k, largest, sorted);
        for (int64_t m = 0; m < k; ++m) {
          od[base + m * s.inner] = pairs[m].first;
          at(m) = pairs[m].second;
        }
        continue;
      }
      // Insertion into the sorted top-k so far: O(n k), small k is the norm.
      // Strictly greater moves ahead, so an equal value keeps its lower
      // index first.
      int64_t size = 0;
      for (int64_t j = 0; j < s.n; ++j) {
        int64_t pos = size;
        while (pos > 0 && row[j * s.inner] > row[at(pos - 1) * s.inner]) --pos;
        if (pos >= k) continue;
        const int64_t end = std::min(size, k - 1);
        for (int64_t m = end; m > pos; --m) at(m) = at(m - 1);
        at(pos) = j;
        size = std::min(size + 1, k);
      }
      for (int64_t m = 0; m < k; ++m) {
        od[base + m * s.inner] = row[at(m) * s.inner];
      }
    }
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
  PAREX_ASSIGN_OR_RETURN(const TopKShape s, TopKAxis(ctx, x->dims()));
  const int64_t slots = s.outer * s.inner;
  const int64_t k = slots > 0 ? indices->numel() / slots : 0;
  if (indices->numel() != slots * k || dout->numel() != indices->numel() ||
      indices->rank() != x->rank()) {
    return ctx.Error("Indices " + DimsToString(indices->dims()) +
                     " and Out@GRAD " + DimsToString(dout->dims()) +
                     " do not match X " + DimsToString(x->dims()));
  }
  const int64_t* id = indices->data<int64_t>();
  const T* g = dout->data<T>();
  T* dxd = dx->data<T>();
  std::fill(dxd, dxd + x->numel(), T(0));
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      for (int64_t m = 0; m < k; ++m) {
        const int64_t at = (o * k + m) * s.inner + i;
        const int64_t j = id[at];
        if (j < 0 || j >= s.n) {
          return ctx.Error("index " + std::to_string(j) + " is outside [0, " +
                           std::to_string(s.n) + ")");
        }
        dxd[(o * s.n + j) * s.inner + i] += g[at];
      }
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
void ArgMax(const T* x, Index* out, int64_t outer, int64_t extent,
            int64_t inner) {
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
  if (x.numel() == 0)
    return ctx.Error("X " + DimsToString(x.dims()) + " holds no element");
  int64_t outer = 1, extent = x.numel(), inner = 1;
  if (!ctx.Attr<bool>("flatten")) {
    const int rank = x.rank();
    int64_t axis =
        ctx.Attr<int64_t>("axis");  // in range: the schema checked it
    if (axis < 0) axis += rank;
    outer = extent = inner = 1;
    for (int d = 0; d < rank; ++d)
      (d < axis ? outer : d == axis ? extent : inner) *= x.dims()[d];
  }
  Tensor* out = ctx.Output("Out");
  if (out->dtype() == DType::kInt32) {
    ArgMax(x.data<T>(), out->data<int32_t>(), outer, extent, inner);
  } else {
    ArgMax(x.data<T>(), out->data<int64_t>(), outer, extent, inner);
  }
  return Status::Ok();
}

// ---- one_hot_v2
// --------------------------------------------------------------

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
    case DType::kFP32:
      return OneHot<Index, float>(ctx, x, out);
    case DType::kFP64:
      return OneHot<Index, double>(ctx, x, out);
    case DType::kInt32:
      return OneHot<Index, int32_t>(ctx, x, out);
    case DType::kInt64:
      return OneHot<Index, int64_t>(ctx, x, out);
    default:
      return ctx.Error(std::string("Out cannot be ") + DTypeName(out->dtype()));
  }
}

}  // namespace

void RegisterMetricKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "top_k", TopKKernel, float, double);
  PAREX_CPU_KERNEL(r, "top_k_grad", TopKGradKernel, float, double);
  PAREX_CPU_KERNEL(r, "top_k_v2", TopKKernel, float, double);
  PAREX_CPU_KERNEL(r, "top_k_v2_grad", TopKGradKernel, float, double);
  PAREX_CPU_KERNEL(r, "accuracy", AccuracyKernel, float, double);
  PAREX_CPU_KERNEL(r, "arg_max", ArgMaxKernel, float, double, int32_t, int64_t);
  PAREX_CPU_KERNEL(r, "one_hot_v2", OneHotKernel, int32_t, int64_t);
}

}  // namespace parex
