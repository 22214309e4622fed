// lookup_table(_v2) and their gradients on CPU: row gathers from W, and
// row scatter-adds into a dense W@GRAD or, with is_sparse, W@GRAD as
// SelectedRows (a row per id, in Ids order). Semantics:
// graph/ir/ops/lookup_table_ops.cc.
//
// REQUIRES (ensured by the schemas' shape inference, which runs first): W is
// [V, D]; Ids is int64 or int32; Out / Out@GRAD hold one D-row per id.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/cpu_kernels.h"

namespace parex {
namespace {

// The i-th id, whichever integer type Ids holds.
int64_t IdAt(const Tensor& ids, int64_t i) {
  return ids.dtype() == DType::kInt32 ? ids.data<int32_t>()[i]
                                      : ids.data<int64_t>()[i];
}

Status OutOfRange(const KernelContext& ctx, int64_t id, int64_t i,
                  int64_t rows) {
  return ctx.Error("id " + std::to_string(id) + " (Ids element " +
                   std::to_string(i) + ") is outside the table's rows [0, " +
                   std::to_string(rows) + ")");
}

template <typename T>
Status LookupTableKernel(KernelContext& ctx) {
  const Tensor& w = *ctx.Input("W");
  const Tensor& ids = *ctx.Input("Ids");
  const int64_t rows = w.dim(0), width = w.dim(1);
  const int64_t padding_idx = ctx.Attr<int64_t>("padding_idx");
  const T* table = w.data<T>();
  T* out = ctx.Output("Out")->data<T>();
  for (int64_t i = 0, i_end = ids.numel(); i < i_end; ++i) {
    const int64_t id = IdAt(ids, i);
    T* row = out + i * width;
    if (padding_idx != -1 && id == padding_idx) {
      std::fill_n(row, width, T(0));
    } else if (id < 0 || id >= rows) {
      return OutOfRange(ctx, id, i, rows);
    } else if (width > 0) {
      std::memcpy(row, table + id * width, width * sizeof(T));
    }
  }
  return Status::Ok();
}

// is_sparse: W@GRAD holds the row of each id and Out@GRAD's row for it
// (zeros for padding_idx, which gets no gradient).
template <typename T>
Status SparseLookupTableGrad(KernelContext& ctx, Variable* var) {
  const Tensor& ids = *ctx.Input("Ids");
  const Tensor& w = *ctx.Input("W");
  const int64_t height = w.dim(0), width = w.dim(1);
  const int64_t padding_idx = ctx.Attr<int64_t>("padding_idx");
  const int64_t n = ids.numel();
  SelectedRows* dw = var->GetMutableSelectedRows();
  dw->height = height;
  dw->rows.resize(n);  // keeps its capacity: no allocation after step one
  PAREX_RETURN_IF_ERROR(
      dw->value.TryAllocate(w.dtype(), {n, width}, ctx.place()));
  const T* dout = ctx.Input("Out@GRAD")->data<T>();
  T* value = dw->value.data<T>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = IdAt(ids, i);
    T* row = value + i * width;
    dw->rows[i] = id;
    if (padding_idx != -1 && id == padding_idx) {
      std::fill_n(row, width, T(0));
      continue;
    }
    if (id < 0 || id >= height) return OutOfRange(ctx, id, i, height);
    if (width > 0) std::memcpy(row, dout + i * width, width * sizeof(T));
  }
  return Status::Ok();
}

template <typename T>
Status LookupTableGradKernel(KernelContext& ctx) {
  if (ctx.Attr<bool>("is_sparse")) {
    Variable* var = ctx.OutputVar("W@GRAD");
    return var != nullptr ? SparseLookupTableGrad<T>(ctx, var) : Status::Ok();
  }
  Tensor* dw_t = ctx.Output("W@GRAD");
  if (dw_t == nullptr) return Status::Ok();
  const Tensor& ids = *ctx.Input("Ids");
  const int64_t rows = dw_t->dim(0), width = dw_t->dim(1);
  const int64_t padding_idx = ctx.Attr<int64_t>("padding_idx");
  const T* dout = ctx.Input("Out@GRAD")->data<T>();
  T* dw = dw_t->data<T>();
  std::fill_n(dw, dw_t->numel(), T(0));
  for (int64_t i = 0, i_end = ids.numel(); i < i_end; ++i) {
    const int64_t id = IdAt(ids, i);
    if (padding_idx != -1 && id == padding_idx) continue;
    if (id < 0 || id >= rows) return OutOfRange(ctx, id, i, rows);
    T* row = dw + id * width;
    const T* g = dout + i * width;
    for (int64_t j = 0; j < width; ++j) row[j] += g[j];
  }
  return Status::Ok();
}

}  // namespace

void RegisterLookupTableKernels(KernelRegistry* r) {
  for (const char* op : {"lookup_table", "lookup_table_v2"}) {
    PAREX_CPU_KERNEL(r, op, LookupTableKernel, float, double);
  }
  for (const char* op : {"lookup_table_grad", "lookup_table_v2_grad"}) {
    PAREX_CPU_KERNEL(r, op, LookupTableGradKernel, float, double);
  }
}

}  // namespace parex
