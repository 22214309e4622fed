// top_k, top_k_grad and accuracy on CPU.
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

}  // namespace

void RegisterMetricKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "top_k", TopKKernel, float, double);
  PAREX_CPU_KERNEL(r, "top_k_grad", TopKGradKernel, float, double);
  PAREX_CPU_KERNEL(r, "accuracy", AccuracyKernel, float, double);
}

}  // namespace parex
