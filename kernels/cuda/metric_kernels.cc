// top_k and accuracy on CUDA, as the CPU kernels compute them
// (kernels/cpu/metric_kernels.cc): top_k along the last dim with ties to
// the lower index (top_k_v2, whose ties follow Paddle's sort, stays on the
// CPU kernels); accuracy from top_k's Indices and int64 labels.
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/train_launchers.h"

namespace parex {
namespace {

template <typename T>
Status TopKKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(int k, AttrOr<int>(ctx, "k", 1));
  const Dims& dims = x->dims();
  const int64_t n = dims.empty() ? 1 : dims.back();
  if (k < 1 || k > n) {
    return ctx.Error("k = " + std::to_string(k) + " is outside [1, " +
                     std::to_string(n) + "]");
  }
  Dims out_dims = dims.empty() ? Dims{1} : dims;
  out_dims.back() = k;
  PAREX_ASSIGN_OR_RETURN(Tensor * out,
                         CudaOutput(ctx, "Out", DTypeOf<T>(), out_dims));
  PAREX_ASSIGN_OR_RETURN(Tensor * indices,
                         CudaOutput(ctx, "Indices", DType::kInt64, out_dims));
  PAREX_CUDA_RETURN_IF_ERROR(LaunchTopK<T>(
      x->data<T>(), out->data<T>(), indices->data<int64_t>(),
      x->numel() / std::max<int64_t>(n, 1), n, 1, k, cuda->stream()));
  return Status::Ok();
}

template <typename T>
Status AccuracyKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* indices,
                         CudaInput(ctx, "Indices", DType::kInt64));
  PAREX_ASSIGN_OR_RETURN(const Tensor* label,
                         CudaInput(ctx, "Label", DType::kInt64));
  if (indices->rank() != 2) return ctx.Error("Indices must have rank 2");
  const int64_t rows = indices->dim(0);
  if (label->numel() != rows) {
    return ctx.Error("Label has " + std::to_string(label->numel()) +
                     " rows, Indices " + std::to_string(rows));
  }
  PAREX_ASSIGN_OR_RETURN(Tensor * accuracy,
                         CudaOutput(ctx, "Accuracy", DType::kFP32, Dims{1}));
  PAREX_ASSIGN_OR_RETURN(Tensor * correct,
                         CudaOutput(ctx, "Correct", DType::kInt32, Dims{1}));
  PAREX_ASSIGN_OR_RETURN(Tensor * total,
                         CudaOutput(ctx, "Total", DType::kInt32, Dims{1}));
  PAREX_CUDA_RETURN_IF_ERROR(LaunchAccuracy(
      indices->data<int64_t>(), label->data<int64_t>(), rows, indices->dim(1),
      accuracy->data<float>(), correct->data<int32_t>(), total->data<int32_t>(),
      cuda->stream()));
  return Status::Ok();
}

}  // namespace

void RegisterCudaMetricKernels(KernelRegistry* r) {
  PAREX_CUDA_KERNEL(r, "top_k", TopKKernel, float, double);
  PAREX_CUDA_KERNEL(r, "accuracy", AccuracyKernel, float, double);
}

}  // namespace parex
