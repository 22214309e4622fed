// elementwise_add/sub/mul/div on CUDA: Out = X op Y, broadcast as on CPU
// (numpy's rule at axis -1, Fluid's at an explicit axis; see
// PlanElementwise).
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_launchers.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/kernel_plans.h"

namespace parex {
namespace {

template <typename T>
Status ElementwiseKernel(KernelContext& ctx, BinaryOp op) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* y, CudaInput(ctx, "Y", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(int axis, AttrOr<int>(ctx, "axis", -1));
  StatusOr<ElementwisePlan> plan = PlanElementwise(x->dims(), y->dims(), axis);
  if (!plan.ok()) return plan.status().WithContext(ctx.op().Label());
  PAREX_ASSIGN_OR_RETURN(Tensor * out,
                         CudaOutput(ctx, "Out", DTypeOf<T>(), plan->out_dims));
  const T* x_data = x->data<T>();
  const T* y_data = y->data<T>();
  T* out_data = out->data<T>();
  switch (plan->kind) {
    case ElementwisePlan::Kind::kSameShape:
      PAREX_CUDA_RETURN_IF_ERROR(LaunchBinarySame<T>(
          op, x_data, y_data, out_data, plan->numel, cuda->stream()));
      break;
    case ElementwisePlan::Kind::kMid:
      PAREX_CUDA_RETURN_IF_ERROR(
          LaunchBinaryMid<T>(op, plan->broadcast_y, x_data, y_data, out_data,
                             plan->pre, plan->n, plan->post, cuda->stream()));
      break;
    case ElementwisePlan::Kind::kGeneral:
      PAREX_CUDA_RETURN_IF_ERROR(LaunchBinaryGeneral<T>(
          op, plan->shape, x_data, y_data, out_data, cuda->stream()));
      break;
  }
  return Status::Ok();
}

template <typename T>
Status AddKernel(KernelContext& ctx) {
  return ElementwiseKernel<T>(ctx, BinaryOp::kAdd);
}
template <typename T>
Status SubKernel(KernelContext& ctx) {
  return ElementwiseKernel<T>(ctx, BinaryOp::kSub);
}
template <typename T>
Status MulKernel(KernelContext& ctx) {
  return ElementwiseKernel<T>(ctx, BinaryOp::kMul);
}
template <typename T>
Status DivKernel(KernelContext& ctx) {
  return ElementwiseKernel<T>(ctx, BinaryOp::kDiv);
}

}  // namespace

void RegisterCudaElementwiseKernels(KernelRegistry* r) {
  PAREX_CUDA_KERNEL(r, "elementwise_add", AddKernel, float, double);
  PAREX_CUDA_KERNEL(r, "elementwise_sub", SubKernel, float, double);
  PAREX_CUDA_KERNEL(r, "elementwise_mul", MulKernel, float, double);
  PAREX_CUDA_KERNEL(r, "elementwise_div", DivKernel, float, double);
}

}  // namespace parex
