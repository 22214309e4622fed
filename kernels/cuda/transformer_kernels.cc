// gelu, layer_norm and lookup_table_v2 with their gradients on CUDA, with
// the CPU kernels' attributes and formulas (kernels/cpu/activation_kernels.cc,
// layer_norm_kernel.cc, lookup_table_kernel.cc):
//   gelu(_grad):   the exact erf form, or the tanh form when `approximate`;
//   layer_norm:    X as [left, right] split at begin_norm_axis, each row
//                  normalised by its mean and population variance (Mean and
//                  Variance outputs), epsilon, optional Scale / Bias;
//   layer_norm_grad: X@GRAD, Scale@GRAD, Bias@GRAD, each optional;
//   lookup_table_v2(_grad): rows of W by Ids (int64 or int32), padding_idx
//                  rows zero and without gradient; a dense W@GRAD only
//                  (is_sparse is Unimplemented on CUDA).
// Row sums run in double on the device, so fp32 results agree with the CPU
// kernels' (element-order, fp32) sums to rounding, not bit for bit.
#include <string>

#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/transformer_launchers.h"

namespace parex {
namespace {

template <typename T>
Status GeluKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(bool approximate,
                         AttrOr<bool>(ctx, "approximate", false));
  PAREX_ASSIGN_OR_RETURN(Tensor * out,
                         CudaOutput(ctx, "Out", DTypeOf<T>(), x->dims()));
  PAREX_CUDA_RETURN_IF_ERROR(LaunchGelu<T>(
      x->data<T>(), out->data<T>(), x->numel(), approximate, cuda->stream()));
  return Status::Ok();
}

template <typename T>
Status GeluGradKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* dout,
                         CudaInput(ctx, "Out@GRAD", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(bool approximate,
                         AttrOr<bool>(ctx, "approximate", false));
  if (x->numel() != dout->numel()) {
    return ctx.Error("Out@GRAD has " + std::to_string(dout->numel()) +
                     " elements, X has " + std::to_string(x->numel()));
  }
  PAREX_ASSIGN_OR_RETURN(Tensor * dx,
                         CudaOutput(ctx, "X@GRAD", DTypeOf<T>(), x->dims()));
  PAREX_CUDA_RETURN_IF_ERROR(LaunchGeluGrad<T>(x->data<T>(), dout->data<T>(),
                                               dx->data<T>(), x->numel(),
                                               approximate, cuda->stream()));
  return Status::Ok();
}

// ---- layer_norm ----

struct LayerNormShape {
  int64_t left = 1, right = 1;
  float epsilon = 1e-5f;
};

StatusOr<LayerNormShape> ReadLayerNorm(const KernelContext& ctx,
                                       const Dims& x) {
  LayerNormShape s;
  PAREX_ASSIGN_OR_RETURN(int axis, AttrOr<int>(ctx, "begin_norm_axis", 1));
  PAREX_ASSIGN_OR_RETURN(s.epsilon, AttrOr<float>(ctx, "epsilon", 1e-5f));
  if (axis < 1 || axis > static_cast<int>(x.size())) {
    return ctx.Error("begin_norm_axis " + std::to_string(axis) +
                     " is outside [1, " + std::to_string(x.size()) +
                     "] for X " + DimsToString(x));
  }
  for (size_t i = 0; i < x.size(); ++i) {
    (static_cast<int>(i) < axis ? s.left : s.right) *= x[i];
  }
  return s;
}

// The optional per-column input `slot` (Scale or Bias): null when unbound.
template <typename T>
StatusOr<const T*> ColumnInput(const KernelContext& ctx, const char* slot,
                               int64_t right) {
  if (ctx.Input(slot) == nullptr) return static_cast<const T*>(nullptr);
  PAREX_ASSIGN_OR_RETURN(const Tensor* t, CudaInput(ctx, slot, DTypeOf<T>()));
  if (t->numel() != right) {
    return ctx.Error(std::string(slot) + " " + DimsToString(t->dims()) +
                     " must hold " + std::to_string(right) +
                     " values (X's extent past begin_norm_axis)");
  }
  return t->data<T>();
}

// The optional output `slot` of `dims`: null when unbound.
template <typename T>
StatusOr<T*> OptionalOutput(const KernelContext& ctx, const char* slot,
                            const Dims& dims) {
  if (ctx.Output(slot) == nullptr) return static_cast<T*>(nullptr);
  PAREX_ASSIGN_OR_RETURN(Tensor * t, CudaOutput(ctx, slot, DTypeOf<T>(), dims));
  return t->data<T>();
}

template <typename T>
Status LayerNormKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(LayerNormShape s, ReadLayerNorm(ctx, x->dims()));
  PAREX_ASSIGN_OR_RETURN(const T* scale, ColumnInput<T>(ctx, "Scale", s.right));
  PAREX_ASSIGN_OR_RETURN(const T* bias, ColumnInput<T>(ctx, "Bias", s.right));
  PAREX_ASSIGN_OR_RETURN(Tensor * y,
                         CudaOutput(ctx, "Y", DTypeOf<T>(), x->dims()));
  PAREX_ASSIGN_OR_RETURN(T * mean, OptionalOutput<T>(ctx, "Mean", {s.left}));
  PAREX_ASSIGN_OR_RETURN(T * var, OptionalOutput<T>(ctx, "Variance", {s.left}));
  PAREX_CUDA_RETURN_IF_ERROR(LaunchLayerNorm<T>(
      x->data<T>(), scale, bias, y->data<T>(), mean, var, s.left, s.right,
      static_cast<T>(s.epsilon), cuda->stream()));
  return Status::Ok();
}

template <typename T>
Status LayerNormGradKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(LayerNormShape s, ReadLayerNorm(ctx, x->dims()));
  PAREX_ASSIGN_OR_RETURN(const T* scale, ColumnInput<T>(ctx, "Scale", s.right));
  PAREX_ASSIGN_OR_RETURN(const Tensor* mean,
                         CudaInput(ctx, "Mean", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* var,
                         CudaInput(ctx, "Variance", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* dy,
                         CudaInput(ctx, "Y@GRAD", DTypeOf<T>()));
  if (mean->numel() != s.left || var->numel() != s.left ||
      dy->numel() != x->numel()) {
    return ctx.Error("Mean " + DimsToString(mean->dims()) + ", Variance " +
                     DimsToString(var->dims()) + " and Y@GRAD " +
                     DimsToString(dy->dims()) + " do not fit X " +
                     DimsToString(x->dims()));
  }
  PAREX_ASSIGN_OR_RETURN(T * dx, OptionalOutput<T>(ctx, "X@GRAD", x->dims()));
  PAREX_ASSIGN_OR_RETURN(T * dscale,
                         OptionalOutput<T>(ctx, "Scale@GRAD", {s.right}));
  PAREX_ASSIGN_OR_RETURN(T * dbias,
                         OptionalOutput<T>(ctx, "Bias@GRAD", {s.right}));
  PAREX_CUDA_RETURN_IF_ERROR(LaunchLayerNormGrad<T>(
      x->data<T>(), scale, mean->data<T>(), var->data<T>(), dy->data<T>(), dx,
      dscale, dbias, s.left, s.right, static_cast<T>(s.epsilon),
      cuda->stream()));
  return Status::Ok();
}

// ---- lookup_table_v2 ----

struct LookupArgs {
  LookupIds ids;
  int64_t count = 0, rows = 0, width = 0;
};

StatusOr<LookupArgs> ReadLookup(const KernelContext& ctx, const Dims& w) {
  LookupArgs a;
  const Tensor* ids = ctx.Input("Ids");
  if (ids == nullptr) return ctx.Error("input Ids holds no tensor");
  if (ids->dtype() != DType::kInt64 && ids->dtype() != DType::kInt32) {
    return ctx.Error("Ids must be int64 or int32, got " + ids->DebugString());
  }
  PAREX_ASSIGN_OR_RETURN(ids, CudaInput(ctx, "Ids", ids->dtype()));
  if (w.size() != 2) {
    return ctx.Error("W must be a [V, D] table, got " + DimsToString(w));
  }
  PAREX_ASSIGN_OR_RETURN(a.ids.padding_idx,
                         AttrOr<int64_t>(ctx, "padding_idx", -1));
  a.ids.data = ids->raw_data();
  a.ids.is_int32 = ids->dtype() == DType::kInt32;
  a.count = ids->numel();
  a.rows = w[0];
  a.width = w[1];
  return a;
}

template <typename T>
Status LookupTableV2Kernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* w, CudaInput(ctx, "W", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(LookupArgs a, ReadLookup(ctx, w->dims()));
  Dims out_dims = ctx.Input("Ids")->dims();
  out_dims.push_back(a.width);
  PAREX_ASSIGN_OR_RETURN(Tensor * out,
                         CudaOutput(ctx, "Out", DTypeOf<T>(), out_dims));
  PAREX_CUDA_RETURN_IF_ERROR(LaunchLookup<T>(w->data<T>(), a.ids,
                                             out->data<T>(), a.count, a.rows,
                                             a.width, cuda->stream()));
  return Status::Ok();
}

template <typename T>
Status LookupTableV2GradKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(bool is_sparse, AttrOr<bool>(ctx, "is_sparse", false));
  if (is_sparse) {
    return Unimplemented(ctx.op().Label() +
                         ": a sparse (is_sparse) W@GRAD on CUDA; use a dense "
                         "gradient (is_sparse false) or a CPU place");
  }
  if (ctx.Output("W@GRAD") == nullptr) return Status::Ok();
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* w, CudaInput(ctx, "W", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(LookupArgs a, ReadLookup(ctx, w->dims()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* dout,
                         CudaInput(ctx, "Out@GRAD", DTypeOf<T>()));
  if (dout->numel() != a.count * a.width) {
    return ctx.Error("Out@GRAD " + DimsToString(dout->dims()) +
                     " does not hold one row of " + std::to_string(a.width) +
                     " per id");
  }
  PAREX_ASSIGN_OR_RETURN(Tensor * dw,
                         CudaOutput(ctx, "W@GRAD", DTypeOf<T>(), w->dims()));
  PAREX_CUDA_RETURN_IF_ERROR(LaunchLookupGrad<T>(a.ids, dout->data<T>(),
                                                 dw->data<T>(), a.count, a.rows,
                                                 a.width, cuda->stream()));
  return Status::Ok();
}

}  // namespace

void RegisterCudaTransformerKernels(KernelRegistry* r) {
  PAREX_CUDA_KERNEL(r, "gelu", GeluKernel, float, double);
  PAREX_CUDA_KERNEL(r, "gelu_grad", GeluGradKernel, float, double);
  PAREX_CUDA_KERNEL(r, "layer_norm", LayerNormKernel, float, double);
  PAREX_CUDA_KERNEL(r, "layer_norm_grad", LayerNormGradKernel, float, double);
  PAREX_CUDA_KERNEL(r, "lookup_table_v2", LookupTableV2Kernel, float, double);
  PAREX_CUDA_KERNEL(r, "lookup_table_v2_grad", LookupTableV2GradKernel, float,
                    double);
}

}  // namespace parex
