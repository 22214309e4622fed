// lookup_table(_v2) and their gradients on CPU: row gathers from W, and
// row scatter-adds into a dense W@GRAD or, with is_sparse, W@GRAD as
// SelectedRows (a row per id, in Ids order). Semantics:
// graph/ir/ops/lookup_table_ops.cc.
//
// W may also be SelectedRows of the table's rows (a table prefetched from
// parameter servers, actors/comm/pserver_communicator.h): rows ascending,
// once each, height V; an id outside its rows is an error naming it.
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

// W's height, and the position of row `id` among its values (W dense: id).
struct TableRows {
  const SelectedRows* prefetched = nullptr;
  int64_t height = 0;
  int64_t Find(int64_t id) const {
    if (prefetched == nullptr) return id;
    const auto it =
        std::lower_bound(prefetched->rows.begin(), prefetched->rows.end(), id);
    return it != prefetched->rows.end() && *it == id
               ? it - prefetched->rows.begin()
               : -1;
  }
};

TableRows RowsOf(const Variable& w) {
  TableRows t;
  t.prefetched = w.GetSelectedRows();
  t.height =
      t.prefetched != nullptr ? t.prefetched->height : w.GetTensor()->dim(0);
  return t;
}

template <typename T>
Status LookupTableKernel(KernelContext& ctx) {
  const Variable& w_var = *ctx.InputVar("W");
  const TableRows table_rows = RowsOf(w_var);
  const Tensor& w = table_rows.prefetched != nullptr
                        ? table_rows.prefetched->value
                        : *w_var.GetTensor();
  const Tensor& ids = *ctx.Input("Ids");
  const int64_t rows = table_rows.height;
  const int64_t width = ctx.Output("Out")->dims().back();
  const int64_t padding_idx = ctx.Attr<int64_t>("padding_idx");
  const T* table = w.data<T>();
  T* out = ctx.Output("Out")->data<T>();
  for (int64_t i = 0, i_end = ids.numel(); i < i_end; ++i) {
    const int64_t id = IdAt(ids, i);
    T* row = out + i * width;
    if (padding_idx != -1 && id == padding_idx) {
      std::fill_n(row, width, T(0));
      continue;
    }
    if (id < 0 || id >= rows) return OutOfRange(ctx, id, i, rows);
    const int64_t at = table_rows.Find(id);
    if (at < 0) {
      return ctx.Error("id " + std::to_string(id) + " (Ids element " +
                       std::to_string(i) +
                       ") is not among the table's prefetched rows");
    }
    if (width > 0) std::memcpy(row, table + at * width, width * sizeof(T));
  }
  return Status::Ok();
}

// is_sparse: W@GRAD holds the row of each id and Out@GRAD's row for it
// (zeros for padding_idx, which gets no gradient).
template <typename T>
Status SparseLookupTableGrad(KernelContext& ctx, Variable* var) {
  const Tensor& ids = *ctx.Input("Ids");
  const int64_t height = RowsOf(*ctx.InputVar("W")).height;
  const Tensor& dout_t = *ctx.Input("Out@GRAD");
  const int64_t width = dout_t.rank() > 0 ? dout_t.dims().back() : 1;
  const int64_t padding_idx = ctx.Attr<int64_t>("padding_idx");
  const int64_t n = ids.numel();
  SelectedRows* dw = var->GetMutableSelectedRows();
  dw->height = height;
  dw->rows.resize(n);  // keeps its capacity: no allocation after step one
  PAREX_RETURN_IF_ERROR(
      dw->value.TryAllocate(dout_t.dtype(), {n, width}, ctx.place()));
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
