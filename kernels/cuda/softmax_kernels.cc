// softmax, softmax_with_cross_entropy and their gradients on CUDA, as the CPU
// kernels compute them (kernels/cpu/softmax_kernels.cc): the tensor is viewed
// as [outer, n, inner] around `axis` (default -1).
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/train_launchers.h"

namespace parex {
namespace {

struct AxisView {
  int axis = 0;  // in [0, rank)
  int64_t outer = 1, n = 1, inner = 1;
};

StatusOr<AxisView> SplitAt(const KernelContext& ctx, const Dims& dims) {
  PAREX_ASSIGN_OR_RETURN(int axis, AttrOr<int>(ctx, "axis", -1));
  const int rank = static_cast<int>(dims.size());
  if (axis < -rank || axis >= std::max(rank, 1)) {
    return ctx.Error("axis " + std::to_string(axis) + " is out of range for " +
                     DimsToString(dims));
  }
  if (axis < 0) axis += rank;
  AxisView v;
  v.axis = axis;
  for (int d = 0; d < rank; ++d) {
    if (d < axis) v.outer *= dims[d];
    if (d == axis) v.n = dims[d];
    if (d > axis) v.inner *= dims[d];
  }
  return v;
}

// The Label input: T values of the logits' shape when soft_label, else one
// int64 or int32 label per row.
template <typename T>
StatusOr<SoftmaxLabels> LabelsOf(const KernelContext& ctx, const Dims& logits,
                                 const AxisView& v) {
  SoftmaxLabels labels;
  PAREX_ASSIGN_OR_RETURN(labels.soft, AttrOr<bool>(ctx, "soft_label", false));
  PAREX_ASSIGN_OR_RETURN(int ignore, AttrOr<int>(ctx, "ignore_index", -100));
  labels.ignore_index = ignore;
  const Tensor* label = ctx.Input("Label");
  if (label == nullptr) return ctx.Error("input 'Label' holds no tensor");
  const DType dtype = labels.soft                       ? DTypeOf<T>()
                      : label->dtype() == DType::kInt32 ? DType::kInt32
                                                        : DType::kInt64;
  PAREX_ASSIGN_OR_RETURN(const Tensor* t, CudaInput(ctx, "Label", dtype));
  const int64_t want = labels.soft ? Numel(logits) : v.outer * v.inner;
  if (t->numel() != want) {
    return ctx.Error("Label " + DimsToString(t->dims()) + " does not match " +
                     (labels.soft ? "the logits " : "one label per row of ") +
                     DimsToString(logits));
  }
  labels.data = t->raw_data();
  labels.is_int32 = dtype == DType::kInt32;
  return labels;
}

template <typename T>
Status SoftmaxKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(AxisView v, SplitAt(ctx, x->dims()));
  PAREX_ASSIGN_OR_RETURN(Tensor * out,
                         CudaOutput(ctx, "Out", DTypeOf<T>(), x->dims()));
  PAREX_CUDA_RETURN_IF_ERROR(LaunchSoftmax<T>(
      x->data<T>(), out->data<T>(), v.outer, v.n, v.inner, cuda->stream()));
  return Status::Ok();
}

template <typename T>
Status SoftmaxGradKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(auto pair, CudaOutAndGrad<T>(ctx));
  const Tensor* out = pair.first;
  const Tensor* dout = pair.second;
  PAREX_ASSIGN_OR_RETURN(AxisView v, SplitAt(ctx, out->dims()));
  PAREX_ASSIGN_OR_RETURN(Tensor * dx,
                         CudaOutput(ctx, "X@GRAD", DTypeOf<T>(), out->dims()));
  PAREX_CUDA_RETURN_IF_ERROR(
      LaunchSoftmaxGrad<T>(out->data<T>(), dout->data<T>(), dx->data<T>(),
                           v.outer, v.n, v.inner, cuda->stream()));
  return Status::Ok();
}

Status CheckUsesSoftmax(const KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(bool use_softmax,
                         AttrOr<bool>(ctx, "use_softmax", true));
  if (!use_softmax) {
    return Unimplemented(ctx.op().Label() +
                         ": use_softmax=false on CUDA (cross-entropy of "
                         "probabilities) is not implemented");
  }
  return Status::Ok();
}

template <typename T>
Status SoftmaxWithCrossEntropyKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_RETURN_IF_ERROR(CheckUsesSoftmax(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* logits,
                         CudaInput(ctx, "Logits", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(AxisView v, SplitAt(ctx, logits->dims()));
  PAREX_ASSIGN_OR_RETURN(SoftmaxLabels labels,
                         LabelsOf<T>(ctx, logits->dims(), v));
  PAREX_ASSIGN_OR_RETURN(
      Tensor * softmax,
      CudaOutput(ctx, "Softmax", DTypeOf<T>(), logits->dims()));
  Dims loss_dims = logits->dims();
  if (!loss_dims.empty()) loss_dims[v.axis] = 1;
  PAREX_ASSIGN_OR_RETURN(Tensor * loss,
                         CudaOutput(ctx, "Loss", DTypeOf<T>(), loss_dims));
  PAREX_CUDA_RETURN_IF_ERROR(LaunchSoftmaxCrossEntropy<T>(
      logits->data<T>(), labels, softmax->data<T>(), loss->data<T>(), v.outer,
      v.n, v.inner, cuda->stream()));
  return Status::Ok();
}

template <typename T>
Status SoftmaxWithCrossEntropyGradKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_RETURN_IF_ERROR(CheckUsesSoftmax(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* softmax,
                         CudaInput(ctx, "Softmax", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* dloss,
                         CudaInput(ctx, "Loss@GRAD", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(AxisView v, SplitAt(ctx, softmax->dims()));
  if (dloss->numel() != v.outer * v.inner) {
    return ctx.Error("Loss@GRAD " + DimsToString(dloss->dims()) +
                     " is not one value per row of " +
                     DimsToString(softmax->dims()));
  }
  PAREX_ASSIGN_OR_RETURN(SoftmaxLabels labels,
                         LabelsOf<T>(ctx, softmax->dims(), v));
  PAREX_ASSIGN_OR_RETURN(
      Tensor * dlogits,
      CudaOutput(ctx, "Logits@GRAD", DTypeOf<T>(), softmax->dims()));
  PAREX_CUDA_RETURN_IF_ERROR(LaunchSoftmaxCrossEntropyGrad<T>(
      softmax->data<T>(), labels, dloss->data<T>(), dlogits->data<T>(), v.outer,
      v.n, v.inner, cuda->stream()));
  return Status::Ok();
}

}  // namespace

void RegisterCudaSoftmaxKernels(KernelRegistry* r) {
  PAREX_CUDA_KERNEL(r, "softmax", SoftmaxKernel, float, double);
  PAREX_CUDA_KERNEL(r, "softmax_grad", SoftmaxGradKernel, float, double);
  PAREX_CUDA_KERNEL(r, "softmax_with_cross_entropy",
                    SoftmaxWithCrossEntropyKernel, float, double);
  PAREX_CUDA_KERNEL(r, "softmax_with_cross_entropy_grad",
                    SoftmaxWithCrossEntropyGradKernel, float, double);
}

}  // namespace parex
