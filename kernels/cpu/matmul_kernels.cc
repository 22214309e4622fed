// CPU kernels of mul, matmul and matmul_v2 and their gradient ops, and of
// Paddle's fc. Every product is a GEMM through cpu::Gemm; batched matmuls
// run one GEMM per output batch (or a single one when X's batch folds into
// its rows). An fp32 matmul whose op says its Y is constant (constant_y, the
// inference fusions') runs through cpu::DnnlConstantMatmul, Y packed once.
//
// REQUIRES (ensured by the schemas' shape inference, which runs first):
// operand dims agree and Out / Out@GRAD have the inferred dims. The matmul
// geometry below mirrors graph/ir/ops/matmul_ops.cc.
#include <algorithm>
#include <string>
#include <type_traits>

#include "kernels/cpu/blas.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/dnnl_matmul.h"
#include "kernels/cpu/fused_activation.h"

namespace parex {
namespace {

int64_t Product(const Dims& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= dims[i];
  return n;
}

// C[m,n] = alpha * op(A) op(B) + beta * C over contiguous row-major
// matrices (A stored [m,k], or [k,m] when trans_a; B likewise), also for
// empty extents, which CBLAS would reject as bad leading dimensions.
template <typename T>
void MatMul(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
            T alpha, const T* a, const T* b, T beta, T* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m * n; ++i)
      c[i] = beta == T(0) ? T(0) : beta * c[i];
    return;
  }
  cpu::Gemm<T>(trans_a, trans_b, m, n, k, alpha, a, trans_a ? m : k, b,
               trans_b ? k : n, beta, c, n);
}

// Gradients of Out[m,n] = alpha * op(Xs) op(Ys), where Xs and Ys are the
// matrices as stored. (Fluid's table: dX = dOut Y^T | Y dOut^T | dOut Y |
// Y^T dOut^T for no / X / Y / both transposed, and likewise for dY.)
template <typename T>
void MatMulGradX(bool tx, bool ty, int64_t m, int64_t n, int64_t k, T alpha,
                 const T* dout, const T* ys, T beta, T* dxs) {
  if (!tx) {
    MatMul(false, !ty, m, k, n, alpha, dout, ys, beta, dxs);
  } else {
    MatMul(ty, true, k, m, n, alpha, ys, dout, beta, dxs);
  }
}

template <typename T>
void MatMulGradY(bool tx, bool ty, int64_t m, int64_t n, int64_t k, T alpha,
                 const T* xs, const T* dout, T beta, T* dys) {
  if (!ty) {
    MatMul(!tx, false, k, n, m, alpha, xs, dout, beta, dys);
  } else {
    MatMul(true, tx, n, k, m, alpha, dout, xs, beta, dys);
  }
}

// ---- mul --------------------------------------------------------------------

struct MulShape {
  int64_t m, k, n;
};

MulShape GetMulShape(const KernelContext& ctx, const Tensor& x,
                     const Tensor& y) {
  const size_t xnc = ctx.Attr<int>("x_num_col_dims");
  const size_t ync = ctx.Attr<int>("y_num_col_dims");
  return {Product(x.dims(), 0, xnc), Product(x.dims(), xnc, x.rank()),
          Product(y.dims(), ync, y.rank())};
}

template <typename T>
Status MulKernel(KernelContext& ctx) {
  const Tensor& x = *ctx.Input("X");
  const Tensor& y = *ctx.Input("Y");
  const MulShape s = GetMulShape(ctx, x, y);
  MatMul<T>(false, false, s.m, s.n, s.k, T(1), x.data<T>(), y.data<T>(), T(0),
            ctx.Output("Out")->data<T>());
  return Status::Ok();
}

template <typename T>
Status MulGradKernel(KernelContext& ctx) {
  const Tensor& x = *ctx.Input("X");
  const Tensor& y = *ctx.Input("Y");
  const T* dout = ctx.Input("Out@GRAD")->data<T>();
  const MulShape s = GetMulShape(ctx, x, y);
  if (Tensor* dx = ctx.Output("X@GRAD")) {
    MatMulGradX<T>(false, false, s.m, s.n, s.k, T(1), dout, y.data<T>(), T(0),
                   dx->data<T>());
  }
  if (Tensor* dy = ctx.Output("Y@GRAD")) {
    MatMulGradY<T>(false, false, s.m, s.n, s.k, T(1), x.data<T>(), dout, T(0),
                   dy->data<T>());
  }
  return Status::Ok();
}

// ---- matmul / matmul_v2 -----------------------------------------------------

// A batched product Out[b] = alpha * op(X[xb(b)]) op(Y[yb(b)]), b over the
// broadcast batch dims.
struct MatmulGeometry {
  int64_t m = 1, n = 1, k = 1;
  bool trans_x = false, trans_y = false;
  Dims batch;    // broadcast batch dims of Out
  Dims x_batch;  // X's batch dims, left-padded with 1s to batch's rank
  Dims y_batch;
  int64_t batch_count = 1;
};

MatmulGeometry GetMatmulGeometry(const KernelContext& ctx, bool v2) {
  const Dims& x = ctx.Input("X")->dims();
  const Dims& y = ctx.Input("Y")->dims();
  MatmulGeometry g;
  g.trans_x = ctx.Attr<bool>(v2 ? "trans_x" : "transpose_X");
  g.trans_y = ctx.Attr<bool>(v2 ? "trans_y" : "transpose_Y");
  const size_t xr = x.size(), yr = y.size();
  if (v2 && xr == 1) g.trans_x = false;
  if (v2 && yr == 1) g.trans_y = false;
  // Stored matrices: vector X is the row [1,K], vector Y the column [K,1].
  const int64_t x_rows = xr == 1 ? 1 : x[xr - 2];
  const int64_t x_cols = x[xr - 1];
  const int64_t y_rows = yr == 1 ? y[0] : y[yr - 2];
  const int64_t y_cols = yr == 1 ? 1 : y[yr - 1];
  g.m = g.trans_x ? x_cols : x_rows;
  g.k = g.trans_x ? x_rows : x_cols;
  g.n = g.trans_y ? y_rows : y_cols;
  const size_t xb = xr > 2 ? xr - 2 : 0, yb = yr > 2 ? yr - 2 : 0;
  const size_t rank = std::max(xb, yb);
  g.x_batch.assign(rank - xb, 1);
  g.x_batch.insert(g.x_batch.end(), x.begin(), x.begin() + xb);
  g.y_batch.assign(rank - yb, 1);
  g.y_batch.insert(g.y_batch.end(), y.begin(), y.begin() + yb);
  g.batch.resize(rank);
  for (size_t i = 0; i < rank; ++i) {
    g.batch[i] = std::max(g.x_batch[i], g.y_batch[i]);
    if (g.x_batch[i] == 0 || g.y_batch[i] == 0) g.batch[i] = 0;
  }
  g.batch_count = Product(g.batch, 0, rank);
  return g;
}

// The linear index into `operand` (broadcast to `batch`) of output batch b.
int64_t BatchIndex(int64_t b, const Dims& batch, const Dims& operand) {
  int64_t index = 0, stride = 1;
  for (size_t d = batch.size(); d-- > 0;) {
    const int64_t i = b % batch[d];
    b /= batch[d];
    if (operand[d] != 1) index += i * stride;
    stride *= operand[d];
  }
  return index;
}

// True when Y is one matrix for all batches and X's batches are the output's
// and untransposed: X then folds into one [batch*m, k] matrix.
bool FoldsX(const MatmulGeometry& g) {
  return !g.trans_x && Product(g.y_batch, 0, g.y_batch.size()) == 1 &&
         Product(g.x_batch, 0, g.x_batch.size()) == g.batch_count;
}

template <typename T>
Status MatmulImpl(KernelContext& ctx, bool v2) {
  const MatmulGeometry g = GetMatmulGeometry(ctx, v2);
  const T alpha = v2 ? T(1) : static_cast<T>(ctx.Attr<float>("alpha"));
  const T* x = ctx.Input("X")->data<T>();
  const T* y = ctx.Input("Y")->data<T>();
  T* out = ctx.Output("Out")->data<T>();
  if (FoldsX(g)) {
    if constexpr (std::is_same<T, float>::value) {
      // A constant Y (an fc's weights): packed once for oneDNN's matmul.
      if (alpha == 1.0f && ctx.HasAttr("constant_y") &&
          ctx.Attr<bool>("constant_y") &&
          ctx.State<cpu::DnnlConstantMatmul>()->Run(
              g.batch_count * g.m, g.k, g.n, g.trans_y, x, y, out)) {
        return Status::Ok();
      }
    }
    MatMul(false, g.trans_y, g.batch_count * g.m, g.n, g.k, alpha, x, y, T(0),
           out);
    return Status::Ok();
  }
  for (int64_t b = 0; b < g.batch_count; ++b) {
    const int64_t xi = BatchIndex(b, g.batch, g.x_batch);
    const int64_t yi = BatchIndex(b, g.batch, g.y_batch);
    MatMul(g.trans_x, g.trans_y, g.m, g.n, g.k, alpha, x + xi * g.m * g.k,
           y + yi * g.k * g.n, T(0), out + b * g.m * g.n);
  }
  return Status::Ok();
}

template <typename T>
Status MatmulGradImpl(KernelContext& ctx, bool v2) {
  const MatmulGeometry g = GetMatmulGeometry(ctx, v2);
  const T alpha = v2 ? T(1) : static_cast<T>(ctx.Attr<float>("alpha"));
  const T* x = ctx.Input("X")->data<T>();
  const T* y = ctx.Input("Y")->data<T>();
  const T* dout = ctx.Input("Out@GRAD")->data<T>();
  Tensor* dx = ctx.Output("X@GRAD");
  Tensor* dy = ctx.Output("Y@GRAD");
  const int64_t mk = g.m * g.k, kn = g.k * g.n, mn = g.m * g.n;
  if (FoldsX(g)) {
    const int64_t rows = g.batch_count * g.m;
    if (dx) {
      MatMulGradX(false, g.trans_y, rows, g.n, g.k, alpha, dout, y, T(0),
                  dx->data<T>());
    }
    if (dy) {
      MatMulGradY(false, g.trans_y, rows, g.n, g.k, alpha, x, dout, T(0),
                  dy->data<T>());
    }
    return Status::Ok();
  }
  // An operand broadcast over some batch dims sums its batches' gradients.
  const bool sum_x = Product(g.x_batch, 0, g.x_batch.size()) != g.batch_count;
  const bool sum_y = Product(g.y_batch, 0, g.y_batch.size()) != g.batch_count;
  if (dx && sum_x) std::fill_n(dx->data<T>(), dx->numel(), T(0));
  if (dy && sum_y) std::fill_n(dy->data<T>(), dy->numel(), T(0));
  for (int64_t b = 0; b < g.batch_count; ++b) {
    const int64_t xi = BatchIndex(b, g.batch, g.x_batch);
    const int64_t yi = BatchIndex(b, g.batch, g.y_batch);
    if (dx) {
      MatMulGradX(g.trans_x, g.trans_y, g.m, g.n, g.k, alpha, dout + b * mn,
                  y + yi * kn, T(sum_x ? 1 : 0), dx->data<T>() + xi * mk);
    }
    if (dy) {
      MatMulGradY(g.trans_x, g.trans_y, g.m, g.n, g.k, alpha, x + xi * mk,
                  dout + b * mn, T(sum_y ? 1 : 0), dy->data<T>() + yi * kn);
    }
  }
  return Status::Ok();
}

// ---- fc ---------------------------------------------------------------------

// Out = act(Input' W + Bias) (graph/ir/ops/matmul_ops.cc): a constant fp32 W
// (constant_w, the inference fusions') through cpu::DnnlConstantMatmul with
// the bias and relu inside the product; else a GEMM, then one pass adding
// the bias and applying the activation.
template <typename T>
Status FcKernel(KernelContext& ctx) {
  const Tensor& x = *ctx.Input("Input");
  const Tensor& w = *ctx.Input("W");
  const Tensor* bias = ctx.Input("Bias");
  Tensor* out = ctx.Output("Out");
  const size_t ncd = ctx.Attr<int>("in_num_col_dims");
  const int64_t m = Product(x.dims(), 0, ncd);
  const int64_t k = Product(x.dims(), ncd, x.rank());
  const int64_t n = w.dims()[1];
  const bool relu = ctx.Attr<std::string>("activation_type") == "relu";
  const T* b = bias != nullptr ? bias->data<T>() : nullptr;
  if constexpr (std::is_same<T, float>::value) {
    if (ctx.HasAttr("constant_w") && ctx.Attr<bool>("constant_w") &&
        ctx.State<cpu::DnnlConstantMatmul>()->Run(
            m, k, n, /*trans_y=*/false, x.data<float>(), w.data<float>(),
            out->data<float>(), b, relu)) {
      return Status::Ok();
    }
  }
  T* y = out->data<T>();
  MatMul<T>(false, false, m, n, k, T(1), x.data<T>(), w.data<T>(), T(0), y);
  if (b == nullptr && !relu) return Status::Ok();
  for (int64_t i = 0; i < m; ++i) {
    T* row = y + i * n;
    for (int64_t j = 0; j < n; ++j) {
      const T v = b != nullptr ? row[j] + b[j] : row[j];
      row[j] = cpu::ApplyFusedActivation(relu ? 1 : 0, v, T(0));
    }
  }
  return Status::Ok();
}

template <typename T>
Status MatmulKernel(KernelContext& ctx) {
  return MatmulImpl<T>(ctx, /*v2=*/false);
}
template <typename T>
Status MatmulV2Kernel(KernelContext& ctx) {
  return MatmulImpl<T>(ctx, /*v2=*/true);
}
template <typename T>
Status MatmulGradKernel(KernelContext& ctx) {
  return MatmulGradImpl<T>(ctx, /*v2=*/false);
}
template <typename T>
Status MatmulV2GradKernel(KernelContext& ctx) {
  return MatmulGradImpl<T>(ctx, /*v2=*/true);
}

}  // namespace

void RegisterMatmulKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "mul", MulKernel, float, double);
  PAREX_CPU_KERNEL(r, "mul_grad", MulGradKernel, float, double);
  PAREX_CPU_KERNEL(r, "matmul", MatmulKernel, float, double);
  PAREX_CPU_KERNEL(r, "matmul_grad", MatmulGradKernel, float, double);
  PAREX_CPU_KERNEL(r, "matmul_v2", MatmulV2Kernel, float, double);
  PAREX_CPU_KERNEL(r, "matmul_v2_grad", MatmulV2GradKernel, float, double);
  PAREX_CPU_KERNEL(r, "fc", FcKernel, float, double);
}

}  // namespace parex
