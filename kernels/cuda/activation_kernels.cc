// relu, sigmoid and tanh on CUDA: X -> Out of the same shape (Out may be X).
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_launchers.h"
#include "kernels/cuda/cuda_status.h"

namespace parex {
namespace {

template <typename T>
Status UnaryKernel(KernelContext& ctx, UnaryOp op) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(Tensor * out,
                         CudaOutput(ctx, "Out", DTypeOf<T>(), x->dims()));
  PAREX_CUDA_RETURN_IF_ERROR(LaunchUnary<T>(op, x->data<T>(), out->data<T>(),
                                            x->numel(), cuda->stream()));
  return Status::Ok();
}

template <typename T>
Status ReluKernel(KernelContext& ctx) {
  return UnaryKernel<T>(ctx, UnaryOp::kRelu);
}
template <typename T>
Status SigmoidKernel(KernelContext& ctx) {
  return UnaryKernel<T>(ctx, UnaryOp::kSigmoid);
}
template <typename T>
Status TanhKernel(KernelContext& ctx) {
  return UnaryKernel<T>(ctx, UnaryOp::kTanh);
}

}  // namespace

void RegisterCudaActivationKernels(KernelRegistry* r) {
  PAREX_CUDA_KERNEL(r, "relu", ReluKernel, float, double);
  PAREX_CUDA_KERNEL(r, "sigmoid", SigmoidKernel, float, double);
  PAREX_CUDA_KERNEL(r, "tanh", TanhKernel, float, double);
}

}  // namespace parex
