// layer_norm and layer_norm_grad on CPU (Paddle's semantics). X is seen as
// [left, right] split at begin_norm_axis; each row is normalised by its mean
// and population variance:
//   Y = (x - mean) / sqrt(var + eps) * Scale + Bias
// and the gradient, with x_hat = (x - mean) * rstd, g = dY * Scale:
//   dX = rstd * (g - mean(g) - x_hat * mean(g * x_hat))
//   dScale = sum over rows of dY * x_hat,  dBias = sum over rows of dY.
// Sums run in element order, so results are the same run to run.
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"

namespace parex {
namespace {

void Split(const Dims& dims, int axis, int64_t* left, int64_t* right) {
  *left = 1;
  *right = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    (static_cast<int>(i) < axis ? *left : *right) *= dims[i];
  }
}

template <typename T>
Status LayerNormKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Scale", "Bias"}));
  const Tensor& x = *ctx.Input("X");
  int64_t left = 0, right = 0;
  Split(x.dims(), ctx.Attr<int>("begin_norm_axis"), &left, &right);
  const T eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  const T* scale = ctx.Input("Scale") ? ctx.Input("Scale")->data<T>() : nullptr;
  const T* bias = ctx.Input("Bias") ? ctx.Input("Bias")->data<T>() : nullptr;
  const T* xd = x.data<T>();
  T* y = ctx.Output("Y")->data<T>();
  T* mean_out = ctx.Output("Mean") ? ctx.Output("Mean")->data<T>() : nullptr;
  T* var_out =
      ctx.Output("Variance") ? ctx.Output("Variance")->data<T>() : nullptr;
  for (int64_t r = 0; r < left; ++r) {
    const T* row = xd + r * right;
    T sum = 0;
    for (int64_t i = 0; i < right; ++i) sum += row[i];
    const T mean = sum / static_cast<T>(right);
    T sq = 0;
    for (int64_t i = 0; i < right; ++i) sq += (row[i] - mean) * (row[i] - mean);
    const T var = sq / static_cast<T>(right);
    const T rstd = T(1) / std::sqrt(var + eps);
    T* out = y + r * right;
    for (int64_t i = 0; i < right; ++i) {
      T v = (row[i] - mean) * rstd;
      if (scale) v *= scale[i];
      if (bias) v += bias[i];
      out[i] = v;
    }
    if (mean_out) mean_out[r] = mean;
    if (var_out) var_out[r] = var;
  }
  return Status::Ok();
}

template <typename T>
Status LayerNormGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(
      ctx.CheckInputs<T>({"X", "Scale", "Bias", "Mean", "Variance", "Y@GRAD"}));
  const Tensor& x = *ctx.Input("X");
  int64_t left = 0, right = 0;
  Split(x.dims(), ctx.Attr<int>("begin_norm_axis"), &left, &right);
  const T eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  const T* scale = ctx.Input("Scale") ? ctx.Input("Scale")->data<T>() : nullptr;
  const T* xd = x.data<T>();
  const T* mean = ctx.Input("Mean")->data<T>();
  const T* var = ctx.Input("Variance")->data<T>();
  const T* dy = ctx.Input("Y@GRAD")->data<T>();
  Tensor* dx_t = ctx.Output("X@GRAD");
  Tensor* dscale_t = ctx.Output("Scale@GRAD");
  Tensor* dbias_t = ctx.Output("Bias@GRAD");
  T* dscale = dscale_t ? dscale_t->data<T>() : nullptr;
  T* dbias = dbias_t ? dbias_t->data<T>() : nullptr;
  for (int64_t i = 0; dscale && i < right; ++i) dscale[i] = 0;
  for (int64_t i = 0; dbias && i < right; ++i) dbias[i] = 0;
  std::vector<T> g(dx_t ? right : 0);
  for (int64_t r = 0; r < left; ++r) {
    const T* row = xd + r * right;
    const T* dyr = dy + r * right;
    const T rstd = T(1) / std::sqrt(var[r] + eps);
    for (int64_t i = 0; i < right; ++i) {
      const T x_hat = (row[i] - mean[r]) * rstd;
      if (dscale) dscale[i] += dyr[i] * x_hat;
      if (dbias) dbias[i] += dyr[i];
    }
    if (dx_t == nullptr) continue;
    T g_sum = 0, gx_sum = 0;
    for (int64_t i = 0; i < right; ++i) {
      g[i] = scale ? dyr[i] * scale[i] : dyr[i];
      g_sum += g[i];
      gx_sum += g[i] * (row[i] - mean[r]) * rstd;
    }
    const T g_mean = g_sum / static_cast<T>(right);
    const T gx_mean = gx_sum / static_cast<T>(right);
    T* dx = dx_t->data<T>() + r * right;
    for (int64_t i = 0; i < right; ++i) {
      const T x_hat = (row[i] - mean[r]) * rstd;
      dx[i] = rstd * (g[i] - g_mean - x_hat * gx_mean);
    }
  }
  return Status::Ok();
}

}  // namespace

void RegisterLayerNormKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "layer_norm", LayerNormKernel, float, double);
  PAREX_CPU_KERNEL(r, "layer_norm_grad", LayerNormGradKernel, float, double);
}

}  // namespace parex
