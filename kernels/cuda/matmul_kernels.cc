// mul, matmul and matmul_v2 on CUDA through cuBLAS (cuda_blas.h); shapes as
// in Fluid (see the plans in kernel_plans.h).
//   mul:       Out = flatten(X, x_num_col_dims) * flatten(Y, y_num_col_dims)
//   matmul:    Out = alpha * op(X) * op(Y), transpose_X / transpose_Y
//   matmul_v2: Out = op(X) * op(Y), trans_x / trans_y, numpy broadcasting
//   matmul_v2_grad: X@GRAD / Y@GRAD by the CPU kernel's table (dX = dOut
//     op(Y)^T, or op(Y) dOut^T when X is stored transposed; dY likewise); an
//     operand broadcast over batch dims gets the sum of its batches' gradients
#include "kernels/cuda/cuda_blas.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_status.h"
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

// Strides (elements) between the batched matrices of one GEMM call.
struct GradStrides {
  int64_t x = 0, y = 0, dout = 0;
};

// X@GRAD as stored (transposed or not) of `batch` products, beta 0 or 1
// (accumulate).
template <typename T>
Status GradX(const CudaDeviceContext& cuda, const MatmulPlan& p, const T* dout,
             const T* y, T* dx, const GradStrides& s, int64_t batch,
             bool accumulate) {
  const T beta = accumulate ? T(1) : T(0);
  if (!p.trans_x) {  // dX[m,k] = dOut[m,n] op(Y)^T
    return CudaGemm<T>(cuda, false, !p.trans_y, p.m, p.k, p.n, T(1), dout, p.n,
                       s.dout, y, p.ldy, s.y, beta, dx, p.ldx, s.x, batch);
  }
  // dX[k,m] = op(Y) dOut^T
  return CudaGemm<T>(cuda, p.trans_y, true, p.k, p.m, p.n, T(1), y, p.ldy, s.y,
                     dout, p.n, s.dout, beta, dx, p.ldx, s.x, batch);
}

template <typename T>
Status GradY(const CudaDeviceContext& cuda, const MatmulPlan& p, const T* x,
             const T* dout, T* dy, const GradStrides& s, int64_t batch,
             bool accumulate) {
  const T beta = accumulate ? T(1) : T(0);
  if (!p.trans_y) {  // dY[k,n] = op(X)^T dOut[m,n]
    return CudaGemm<T>(cuda, !p.trans_x, false, p.k, p.n, p.m, T(1), x, p.ldx,
                       s.x, dout, p.n, s.dout, beta, dy, p.ldy, s.y, batch);
  }
  // dY[n,k] = dOut^T op(X)
  return CudaGemm<T>(cuda, true, p.trans_x, p.n, p.k, p.m, T(1), dout, p.n,
                     s.dout, x, p.ldx, s.x, beta, dy, p.ldy, s.y, batch);
}

// The strided plan: one batched GEMM per gradient whose operand has a matrix
// per batch; a shared operand's gradient sums the batches (one GEMM over
// X's folded rows for dY when it can, else one accumulating GEMM per batch,
// in batch order).
template <typename T>
Status StridedMatmulGrad(const CudaDeviceContext& cuda, const MatmulPlan& p,
                         const T* x, const T* y, const T* dout, T* dx, T* dy) {
  const int64_t mn = p.m * p.n;
  if (dx != nullptr) {
    if (p.x_stride != 0 || p.batch == 1) {
      PAREX_RETURN_IF_ERROR(GradX(
          cuda, p, dout, y, dx, {p.x_stride, p.y_stride, mn}, p.batch, false));
    } else {
      for (int64_t b = 0; b < p.batch; ++b) {
        PAREX_RETURN_IF_ERROR(GradX(cuda, p, dout + b * mn, y + b * p.y_stride,
                                    dx, {}, 1, b > 0));
      }
    }
  }
  if (dy != nullptr) {
    if (p.y_stride != 0 || p.batch == 1) {
      PAREX_RETURN_IF_ERROR(GradY(
          cuda, p, x, dout, dy, {p.x_stride, p.y_stride, mn}, p.batch, false));
    } else if (!p.trans_x && p.x_stride == p.x_matrix_size) {
      // X's batches are consecutive [m,k] rows: one [batch*m, k] matrix.
      MatmulPlan folded = p;
      folded.m = p.batch * p.m;
      PAREX_RETURN_IF_ERROR(GradY(cuda, folded, x, dout, dy, {}, 1, false));
    } else {
      for (int64_t b = 0; b < p.batch; ++b) {
        PAREX_RETURN_IF_ERROR(GradY(cuda, p, x + b * p.x_stride, dout + b * mn,
                                    dy, {}, 1, b > 0));
      }
    }
  }
  return Status::Ok();
}

template <typename T>
Status MatmulV2GradKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* y, CudaInput(ctx, "Y", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* dout,
                         CudaInput(ctx, "Out@GRAD", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(bool trans_x, AttrOr<bool>(ctx, "trans_x", false));
  PAREX_ASSIGN_OR_RETURN(bool trans_y, AttrOr<bool>(ctx, "trans_y", false));
  StatusOr<MatmulPlan> planned =
      PlanMatmulV2(x->dims(), y->dims(), trans_x, trans_y);
  if (!planned.ok()) return planned.status().WithContext(ctx.op().Label());
  const MatmulPlan& p = *planned;
  if (dout->numel() != Numel(p.out_dims)) {
    return ctx.Error("Out@GRAD " + DimsToString(dout->dims()) +
                     " is not the product's " + DimsToString(p.out_dims));
  }
  T* dx = nullptr;
  T* dy = nullptr;
  if (ctx.Output("X@GRAD") != nullptr) {
    PAREX_ASSIGN_OR_RETURN(Tensor * t,
                           CudaOutput(ctx, "X@GRAD", DTypeOf<T>(), x->dims()));
    dx = t->data<T>();
  }
  if (ctx.Output("Y@GRAD") != nullptr) {
    PAREX_ASSIGN_OR_RETURN(Tensor * t,
                           CudaOutput(ctx, "Y@GRAD", DTypeOf<T>(), y->dims()));
    dy = t->data<T>();
  }
  // Gradients that are sums (an empty dOut, a broadcast operand) start at 0.
  const bool sum_x = !p.strided && Numel(p.x_batch_dims) != p.batch;
  const bool sum_y = !p.strided && Numel(p.y_batch_dims) != p.batch;
  const bool empty = dout->numel() == 0;
  if (dx != nullptr && (empty || sum_x) && x->numel() > 0) {
    PAREX_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(dx, 0, x->bytes(), cuda->stream()));
  }
  if (dy != nullptr && (empty || sum_y) && y->numel() > 0) {
    PAREX_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(dy, 0, y->bytes(), cuda->stream()));
  }
  if (empty) return Status::Ok();
  Status status;
  if (p.strided) {
    status = StridedMatmulGrad<T>(*cuda, p, x->data<T>(), y->data<T>(),
                                  dout->data<T>(), dx, dy);
  } else {
    // Batch dims broadcast both ways: one GEMM per output batch, summed
    // into a broadcast operand's gradient in batch order.
    const int64_t mn = p.m * p.n;
    for (int64_t b = 0; b < p.batch && status.ok(); ++b) {
      int64_t xo = 0, yo = 0;
      BatchOffsets(p, b, &xo, &yo);
      const T* d = dout->data<T>() + b * mn;
      if (dx != nullptr) {
        status = GradX(*cuda, p, d, y->data<T>() + yo, dx + xo, {}, 1, sum_x);
      }
      if (dy != nullptr && status.ok()) {
        status = GradY(*cuda, p, x->data<T>() + xo, d, dy + yo, {}, 1, sum_y);
      }
    }
  }
  if (!status.ok()) return status.WithContext(ctx.op().Label());
  return Status::Ok();
}

}  // namespace

void RegisterCudaMatmulKernels(KernelRegistry* r) {
  PAREX_CUDA_KERNEL(r, "mul", MulKernel, float, double);
  PAREX_CUDA_KERNEL(r, "matmul", MatmulKernel, float, double);
  PAREX_CUDA_KERNEL(r, "matmul_v2", MatmulV2Kernel, float, double);
  PAREX_CUDA_KERNEL(r, "matmul_v2_grad", MatmulV2GradKernel, float, double);
}

}  // namespace parex
