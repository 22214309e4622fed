// The gradients of the forward CUDA ops an MLP trains with, as the CPU
// kernels compute them:
//   relu_grad, sigmoid_grad, tanh_grad  (from Out and Out@GRAD)
//   mean_grad                           (X@GRAD = Out@GRAD / numel(X))
//   mul_grad                            (two GEMMs through cuBLAS)
#include "kernels/cuda/cuda_blas.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/kernel_plans.h"
#include "kernels/cuda/train_launchers.h"

namespace parex {
namespace {

template <typename T>
Status ActivationGradKernel(KernelContext& ctx, ActivationGrad op) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(auto pair, CudaOutAndGrad<T>(ctx));
  const Tensor* out = pair.first;
  const Tensor* dout = pair.second;
  PAREX_ASSIGN_OR_RETURN(Tensor * dx,
                         CudaOutput(ctx, "X@GRAD", DTypeOf<T>(), out->dims()));
  PAREX_CUDA_RETURN_IF_ERROR(
      LaunchActivationGrad<T>(op, out->data<T>(), dout->data<T>(),
                              dx->data<T>(), out->numel(), cuda->stream()));
  return Status::Ok();
}

template <typename T>
Status ReluGradKernel(KernelContext& ctx) {
  return ActivationGradKernel<T>(ctx, ActivationGrad::kRelu);
}
template <typename T>
Status SigmoidGradKernel(KernelContext& ctx) {
  return ActivationGradKernel<T>(ctx, ActivationGrad::kSigmoid);
}
template <typename T>
Status TanhGradKernel(KernelContext& ctx) {
  return ActivationGradKernel<T>(ctx, ActivationGrad::kTanh);
}

template <typename T>
Status MeanGradKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* dout,
                         CudaInput(ctx, "Out@GRAD", DTypeOf<T>()));
  if (dout->numel() != 1) {
    return ctx.Error("Out@GRAD " + DimsToString(dout->dims()) +
                     " is not one value");
  }
  PAREX_ASSIGN_OR_RETURN(Tensor * dx,
                         CudaOutput(ctx, "X@GRAD", DTypeOf<T>(), x->dims()));
  PAREX_CUDA_RETURN_IF_ERROR(LaunchMeanGrad<T>(dout->data<T>(), dx->data<T>(),
                                               x->numel(), cuda->stream()));
  return Status::Ok();
}

// mul's X and Y flattened to [M, K] and [K, N]; Out@GRAD is [M, N]:
//   X@GRAD = Out@GRAD * Y^T,  Y@GRAD = X^T * Out@GRAD.
template <typename T>
Status MulGradKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* y, CudaInput(ctx, "Y", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* dout,
                         CudaInput(ctx, "Out@GRAD", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(int x_num_col_dims,
                         AttrOr<int>(ctx, "x_num_col_dims", 1));
  PAREX_ASSIGN_OR_RETURN(int y_num_col_dims,
                         AttrOr<int>(ctx, "y_num_col_dims", 1));
  StatusOr<MatmulPlan> plan =
      PlanMul(x->dims(), y->dims(), x_num_col_dims, y_num_col_dims);
  if (!plan.ok()) return plan.status().WithContext(ctx.op().Label());
  const int64_t m = plan->m, k = plan->k, n = plan->n;
  if (dout->numel() != m * n) {
    return ctx.Error("Out@GRAD " + DimsToString(dout->dims()) + " is not [" +
                     std::to_string(m) + ", " + std::to_string(n) + "]");
  }
  if (ctx.Output("X@GRAD") != nullptr) {
    PAREX_ASSIGN_OR_RETURN(Tensor * dx,
                           CudaOutput(ctx, "X@GRAD", DTypeOf<T>(), x->dims()));
    Status s =
        CudaGemm<T>(*cuda, false, true, m, k, n, T(1), dout->data<T>(), n, 0,
                    y->data<T>(), n, 0, T(0), dx->data<T>(), k, 0, 1);
    if (!s.ok()) return s.WithContext(ctx.op().Label());
  }
  if (ctx.Output("Y@GRAD") != nullptr) {
    PAREX_ASSIGN_OR_RETURN(Tensor * dy,
                           CudaOutput(ctx, "Y@GRAD", DTypeOf<T>(), y->dims()));
    Status s =
        CudaGemm<T>(*cuda, true, false, k, n, m, T(1), x->data<T>(), k, 0,
                    dout->data<T>(), n, 0, T(0), dy->data<T>(), n, 0, 1);
    if (!s.ok()) return s.WithContext(ctx.op().Label());
  }
  return Status::Ok();
}

}  // namespace

void RegisterCudaGradKernels(KernelRegistry* r) {
  PAREX_CUDA_KERNEL(r, "relu_grad", ReluGradKernel, float, double);
  PAREX_CUDA_KERNEL(r, "sigmoid_grad", SigmoidGradKernel, float, double);
  PAREX_CUDA_KERNEL(r, "tanh_grad", TanhGradKernel, float, double);
  PAREX_CUDA_KERNEL(r, "mean_grad", MeanGradKernel, float, double);
  PAREX_CUDA_KERNEL(r, "mul_grad", MulGradKernel, float, double);
}

}  // namespace parex
