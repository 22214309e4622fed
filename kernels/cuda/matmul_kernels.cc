// mul, matmul and matmul_v2 on CUDA through cuBLAS (cuda_blas.h); shapes as
// in Fluid (see the plans in kernel_plans.h).
//   mul:       Out = flatten(X, x_num_col_dims) * flatten(Y, y_num_col_dims)
//   matmul:    Out = alpha * op(X) * op(Y), transpose_X / transpose_Y
//   matmul_v2: Out = op(X) * op(Y), trans_x / trans_y, numpy broadcasting
#include "kernels/cuda/cuda_blas.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/kernel_plans.h"

namespace parex {
namespace {

template <typename T>
Status RunMatmulPlan(KernelContext& ctx, const CudaDeviceContext& cuda,
                     const StatusOr<MatmulPlan>& planned, const Tensor& x,
                     const Tensor& y, T alpha) {
  if (!planned.ok()) return planned.status().WithContext(ctx.op().Label());
  const MatmulPlan& plan = *planned;
  PAREX_ASSIGN_OR_RETURN(Tensor * out,
                         CudaOutput(ctx, "Out", DTypeOf<T>(), plan.out_dims));
  const T* x_data = x.data<T>();
  const T* y_data = y.data<T>();
  T* out_data = out->data<T>();
  const int64_t out_matrix = plan.m * plan.n;
  Status status;
  if (plan.strided) {
    status = CudaGemm<T>(cuda, plan.trans_x, plan.trans_y, plan.m, plan.n,
                         plan.k, alpha, x_data, plan.ldx, plan.x_stride, y_data,
                         plan.ldy, plan.y_stride, T(0), out_data, plan.n,
                         out_matrix, plan.batch);
  } else {
    // Batch dims broadcast both ways: one GEMM per output matrix.
    for (int64_t b = 0; b < plan.batch && status.ok(); ++b) {
      int64_t x_offset = 0, y_offset = 0;
      BatchOffsets(plan, b, &x_offset, &y_offset);
      status = CudaGemm<T>(cuda, plan.trans_x, plan.trans_y, plan.m, plan.n,
                           plan.k, alpha, x_data + x_offset, plan.ldx, 0,
                           y_data + y_offset, plan.ldy, 0, T(0),
                           out_data + b * out_matrix, plan.n, out_matrix, 1);
    }
  }
  if (!status.ok()) return status.WithContext(ctx.op().Label());
  return Status::Ok();
}

template <typename T>
Status MulKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* y, CudaInput(ctx, "Y", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(int x_num_col_dims,
                         AttrOr<int>(ctx, "x_num_col_dims", 1));
  PAREX_ASSIGN_OR_RETURN(int y_num_col_dims,
                         AttrOr<int>(ctx, "y_num_col_dims", 1));
  return RunMatmulPlan<T>(
      ctx, *cuda, PlanMul(x->dims(), y->dims(), x_num_col_dims, y_num_col_dims),
      *x, *y, T(1));
}

template <typename T>
Status MatmulKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* y, CudaInput(ctx, "Y", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(bool transpose_x,
                         AttrOr<bool>(ctx, "transpose_X", false));
  PAREX_ASSIGN_OR_RETURN(bool transpose_y,
                         AttrOr<bool>(ctx, "transpose_Y", false));
  PAREX_ASSIGN_OR_RETURN(float alpha, AttrOr<float>(ctx, "alpha", 1.0f));
  return RunMatmulPlan<T>(
      ctx, *cuda, PlanMatmul(x->dims(), y->dims(), transpose_x, transpose_y),
      *x, *y, static_cast<T>(alpha));
}

template <typename T>
Status MatmulV2Kernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* y, CudaInput(ctx, "Y", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(bool trans_x, AttrOr<bool>(ctx, "trans_x", false));
  PAREX_ASSIGN_OR_RETURN(bool trans_y, AttrOr<bool>(ctx, "trans_y", false));
  return RunMatmulPlan<T>(ctx, *cuda,
                          PlanMatmulV2(x->dims(), y->dims(), trans_x, trans_y),
                          *x, *y, T(1));
}

}  // namespace

void RegisterCudaMatmulKernels(KernelRegistry* r) {
  PAREX_CUDA_KERNEL(r, "mul", MulKernel, float, double);
  PAREX_CUDA_KERNEL(r, "matmul", MatmulKernel, float, double);
  PAREX_CUDA_KERNEL(r, "matmul_v2", MatmulV2Kernel, float, double);
}

}  // namespace parex
