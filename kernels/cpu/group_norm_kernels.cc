// group_norm, instance_norm and their gradients on CPU (schemas and
// semantics: graph/ir/ops/group_norm_ops.cc). Both normalise groups of
// elements of one sample: group_norm's runs of C / groups channels,
// instance_norm's single channels. With x_hat = (x - mean) * rstd and
// g = dY * Scale[c] over a group of M elements:
//   dX = rstd * (g - mean(g) - x_hat * mean(g * x_hat))
//   dScale[c] = sum dY * x_hat,  dBias[c] = sum dY  (over samples and space).
// Sums run in element order, so results are the same run to run.
#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"

namespace parex {
namespace {

// X seen as N samples of C channels and S positions, channels split in G
// groups; NHWC keeps channels innermost.
struct Groups {
  int64_t n = 0, c = 0, s = 1, g = 1;
  bool nhwc = false;
  int64_t per_group() const { return c / g * s; }
  // Calls f(element index, channel) for every element of group `gi` of
  // sample `ni`, in memory order.
  template <typename F>
  void ForEach(int64_t ni, int64_t gi, F f) const {
    const int64_t cg = c / g;
    if (!nhwc) {
      const int64_t base = (ni * c + gi * cg) * s;
      for (int64_t k = 0; k < cg * s; ++k) f(base + k, gi * cg + k / s);
      return;
    }
    for (int64_t p = 0; p < s; ++p) {
      const int64_t base = (ni * s + p) * c + gi * cg;
      for (int64_t k = 0; k < cg; ++k) f(base + k, gi * cg + k);
    }
  }
};

// instance_norm or its gradient (else group_norm's).
bool IsInstanceNorm(const KernelContext& ctx) {
  return ctx.op().type().rfind("instance_norm", 0) == 0;
}

Groups GroupsOf(const KernelContext& ctx, const Dims& x) {
  Groups gr;
  const bool instance = IsInstanceNorm(ctx);
  gr.nhwc = !instance && ctx.Attr<std::string>("data_layout") == "NHWC";
  gr.n = x[0];
  gr.c = gr.nhwc ? x.back() : x[1];
  for (size_t i = 1; i < x.size(); ++i) {
    if (static_cast<int64_t>(i) != (gr.nhwc ? x.size() - 1 : 1)) gr.s *= x[i];
  }
  gr.g = instance ? gr.c : ctx.Attr<int>("groups");
  return gr;
}

const char* MeanSlot(const KernelContext& ctx) {
  return IsInstanceNorm(ctx) ? "SavedMean" : "Mean";
}
const char* VarianceSlot(const KernelContext& ctx) {
  return IsInstanceNorm(ctx) ? "SavedVariance" : "Variance";
}

template <typename T>
Status GroupNormKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Scale", "Bias"}));
  const Tensor& x = *ctx.Input("X");
  const Groups gr = GroupsOf(ctx, x.dims());
  const bool instance = IsInstanceNorm(ctx);
  const T eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  const T* scale = ctx.Input("Scale") ? ctx.Input("Scale")->data<T>() : nullptr;
  const T* bias = ctx.Input("Bias") ? ctx.Input("Bias")->data<T>() : nullptr;
  const T* xd = x.data<T>();
  T* y = ctx.Output("Y")->data<T>();
  Tensor* mean_t = ctx.Output(MeanSlot(ctx));
  Tensor* var_t = ctx.Output(VarianceSlot(ctx));
  const T m = static_cast<T>(gr.per_group());
  for (int64_t ni = 0; ni < gr.n; ++ni) {
    for (int64_t gi = 0; gi < gr.g; ++gi) {
      T sum = 0, sq = 0;
      gr.ForEach(ni, gi, [&](int64_t i, int64_t) { sum += xd[i]; });
      const T mean = sum / m;
      gr.ForEach(ni, gi, [&](int64_t i, int64_t) {
        sq += (xd[i] - mean) * (xd[i] - mean);
      });
      const T var = sq / m;
      const T rstd = T(1) / std::sqrt(var + eps);
      gr.ForEach(ni, gi, [&](int64_t i, int64_t c) {
        T v = (xd[i] - mean) * rstd;
        if (scale) v *= scale[c];
        if (bias) v += bias[c];
        y[i] = v;
      });
      const int64_t at = ni * gr.g + gi;
      if (mean_t) mean_t->data<T>()[at] = mean;
      if (var_t) var_t->data<T>()[at] = instance ? rstd : var;
    }
  }
  return Status::Ok();
}

template <typename T>
Status GroupNormGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(
      ctx.CheckInputs<T>({"X", "Scale", "Mean", "Variance", "SavedMean",
                          "SavedVariance", "Y@GRAD"}));
  const Tensor& x = *ctx.Input("X");
  const Groups gr = GroupsOf(ctx, x.dims());
  const bool instance = IsInstanceNorm(ctx);
  const T eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  const T* scale = ctx.Input("Scale") ? ctx.Input("Scale")->data<T>() : nullptr;
  const T* xd = x.data<T>();
  const T* dy = ctx.Input("Y@GRAD")->data<T>();
  const T* mean = ctx.Input(MeanSlot(ctx))->data<T>();
  const T* var = ctx.Input(VarianceSlot(ctx))->data<T>();
  Tensor* dx_t = ctx.Output("X@GRAD");
  T* dscale =
      ctx.Output("Scale@GRAD") ? ctx.Output("Scale@GRAD")->data<T>() : nullptr;
  T* dbias =
      ctx.Output("Bias@GRAD") ? ctx.Output("Bias@GRAD")->data<T>() : nullptr;
  for (int64_t c = 0; dscale && c < gr.c; ++c) dscale[c] = 0;
  for (int64_t c = 0; dbias && c < gr.c; ++c) dbias[c] = 0;
  const T m = static_cast<T>(gr.per_group());
  for (int64_t ni = 0; ni < gr.n; ++ni) {
    for (int64_t gi = 0; gi < gr.g; ++gi) {
      const int64_t at = ni * gr.g + gi;
      const T rstd = instance ? var[at] : T(1) / std::sqrt(var[at] + eps);
      const T mu = mean[at];
      T g_sum = 0, gx_sum = 0;
      gr.ForEach(ni, gi, [&](int64_t i, int64_t c) {
        const T x_hat = (xd[i] - mu) * rstd;
        if (dscale) dscale[c] += dy[i] * x_hat;
        if (dbias) dbias[c] += dy[i];
        const T g = scale ? dy[i] * scale[c] : dy[i];
        g_sum += g;
        gx_sum += g * x_hat;
      });
      if (dx_t == nullptr) continue;
      T* dx = dx_t->data<T>();
      const T g_mean = g_sum / m, gx_mean = gx_sum / m;
      gr.ForEach(ni, gi, [&](int64_t i, int64_t c) {
        const T g = scale ? dy[i] * scale[c] : dy[i];
        dx[i] = rstd * (g - g_mean - (xd[i] - mu) * rstd * gx_mean);
      });
    }
  }
  return Status::Ok();
}

}  // namespace

void RegisterGroupNormKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "group_norm", GroupNormKernel, float, double);
  PAREX_CPU_KERNEL(r, "group_norm_grad", GroupNormGradKernel, float, double);
  PAREX_CPU_KERNEL(r, "instance_norm", GroupNormKernel, float, double);
  PAREX_CPU_KERNEL(r, "instance_norm_grad", GroupNormGradKernel, float, double);
}

}  // namespace parex
