// batch_norm and batch_norm_grad on CPU, for NCHW (rank 2..5) and NHWC. X is
// viewed as [outer, C, inner]: NCHW gives [N, C, H*W...] (a 2-D [N, C] has
// inner 1), NHWC gives [N*H*W, C, 1]. Semantics: graph/ops/norm_ops.cc.
//
// In place: MeanOut / VarianceOut may be the Mean / Variance tensors (Fluid
// programs bind the same variable), so each channel reads its running value
// before writing the new one. With global statistics SavedMean /
// SavedVariance receive the statistics used (Fluid leaves them unset).
//
// REQUIRES (ensured by the schema's shape inference, which runs first): the
// per-channel tensors have C values; Y@GRAD has X's dims.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"

namespace parex {
namespace {

struct BnShape {
  int64_t outer = 1, c = 1, inner = 1;
  int64_t count() const { return outer * inner; }  // elements per channel
};

BnShape GetBnShape(const KernelContext& ctx, const Dims& x) {
  BnShape s;
  const int64_t numel = Numel(x);
  if (ctx.Attr<std::string>("data_layout") == "NHWC") {
    s.c = x.back();
    s.outer = s.c == 0 ? 0 : numel / s.c;
  } else {
    s.outer = x[0];
    s.c = x[1];
    s.inner = 1;
    for (size_t i = 2; i < x.size(); ++i) s.inner *= x[i];
  }
  return s;
}

// Calls f(row, channel) for every [inner] row of X, row being the offset
// of its first element.
template <typename F>
void ForEachRow(const BnShape& s, F f) {
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t c = 0; c < s.c; ++c) f((o * s.c + c) * s.inner, c);
  }
}

// Per-thread per-channel accumulators; they only grow.
std::vector<double>& Scratch(size_t n) {
  thread_local std::vector<double> buffer;
  if (buffer.size() < n) buffer.resize(n);
  return buffer;
}

// sum over i < n of term(i), in double, in 8 interleaved partial sums
// (lane j takes i = j mod 8), combined in a fixed order: the compiler can
// keep the lanes in vector registers, where one running sum would make every
// addition wait for the previous one. The order is fixed, so the bits are
// the same every run.
template <typename F>
double LaneSum(int64_t n, F term) {
  constexpr int kLanes = 8;
  double lane[kLanes] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) lane[j] += term(i + j);
  }
  for (int j = 0; i < n; ++i, ++j) lane[j] += term(i);
  return ((lane[0] + lane[4]) + (lane[2] + lane[6])) +
         ((lane[1] + lane[5]) + (lane[3] + lane[7]));
}

template <typename T>
T ScalarOf(const Tensor& t) {
  if (t.dtype() == DType::kFP64) return static_cast<T>(t.data<double>()[0]);
  return static_cast<T>(t.data<float>()[0]);
}

template <typename T>
Status BatchNormKernel(KernelContext& ctx) {
  const Tensor& x_t = *ctx.Input("X");
  const BnShape s = GetBnShape(ctx, x_t.dims());
  const double epsilon = ctx.Attr<float>("epsilon");
  double momentum = ctx.Attr<float>("momentum");
  if (const Tensor* m = ctx.Input("MomentumTensor")) {
    if (m->dtype() != DType::kFP32 && m->dtype() != DType::kFP64) {
      return ctx.Error("MomentumTensor must be fp32 or fp64");
    }
    momentum = ScalarOf<double>(*m);
  }
  const bool global =
      (ctx.Attr<bool>("is_test") && !ctx.Attr<bool>("trainable_statistics")) ||
      ctx.Attr<bool>("use_global_stats");
  const T* x = x_t.data<T>();
  const T* scale = ctx.Input("Scale")->data<T>();
  const T* bias = ctx.Input("Bias")->data<T>();
  const T* mean = ctx.Input("Mean")->data<T>();
  const T* variance = ctx.Input("Variance")->data<T>();
  T* y = ctx.Output("Y")->data<T>();
  T* mean_out = ctx.Output("MeanOut")->data<T>();
  T* variance_out = ctx.Output("VarianceOut")->data<T>();
  T* saved_mean = ctx.Output("SavedMean")->data<T>();
  T* saved_inv_std = ctx.Output("SavedVariance")->data<T>();

  if (global) {
    for (int64_t c = 0; c < s.c; ++c) {
      saved_mean[c] = mean[c];
      saved_inv_std[c] = static_cast<T>(1.0 / std::sqrt(variance[c] + epsilon));
      mean_out[c] = mean[c];
      variance_out[c] = variance[c];
    }
  } else {
    // Two passes (mean, then squared deviations), each row summed in double.
    std::vector<double>& acc = Scratch(2 * s.c);
    double* sum = acc.data();
    double* sq = acc.data() + s.c;
    std::fill_n(acc.data(), 2 * s.c, 0.0);
    ForEachRow(s, [&](int64_t row, int64_t c) {
      const T* xr = x + row;
      sum[c] += LaneSum(s.inner, [xr](int64_t i) { return double{xr[i]}; });
    });
    const double n = static_cast<double>(s.count());
    for (int64_t c = 0; c < s.c; ++c) sum[c] = n > 0 ? sum[c] / n : 0.0;
    ForEachRow(s, [&](int64_t row, int64_t c) {
      const T* xr = x + row;
      const double m = sum[c];
      sq[c] += LaneSum(s.inner, [xr, m](int64_t i) {
        const double d = xr[i] - m;
        return d * d;
      });
    });
    for (int64_t c = 0; c < s.c; ++c) {
      const double var = n > 0 ? sq[c] / n : 0.0;
      saved_mean[c] = static_cast<T>(sum[c]);
      saved_inv_std[c] = static_cast<T>(1.0 / std::sqrt(var + epsilon));
      mean_out[c] =
          static_cast<T>(momentum * mean[c] + (1 - momentum) * sum[c]);
      variance_out[c] =
          static_cast<T>(momentum * variance[c] + (1 - momentum) * var);
    }
  }
  // y = (x - mean) * inv_std * scale + bias = x * a + b per channel.
  ForEachRow(s, [&](int64_t row, int64_t c) {
    const T a = saved_inv_std[c] * scale[c];
    const T b = bias[c] - saved_mean[c] * a;
    for (int64_t i = 0; i < s.inner; ++i) y[row + i] = x[row + i] * a + b;
  });
  return Status::Ok();
}

template <typename T>
Status BatchNormGradKernel(KernelContext& ctx) {
  const Tensor& x_t = *ctx.Input("X");
  const BnShape s = GetBnShape(ctx, x_t.dims());
  const bool global =
      ctx.Attr<bool>("is_test") || ctx.Attr<bool>("use_global_stats");
  const double epsilon = ctx.Attr<float>("epsilon");
  const T* x = x_t.data<T>();
  const T* scale = ctx.Input("Scale")->data<T>();
  const T* dy = ctx.Input("Y@GRAD")->data<T>();
  Tensor* dx_t = ctx.Output("X@GRAD");
  Tensor* dscale_t = ctx.Output("Scale@GRAD");
  Tensor* dbias_t = ctx.Output("Bias@GRAD");

  // Per channel: mean, inverse std, sum(dy), sum(dy * x_hat).
  std::vector<double>& acc = Scratch(4 * s.c);
  double* mu = acc.data();
  double* inv_std = mu + s.c;
  double* sum_dy = inv_std + s.c;
  double* sum_dy_xhat = sum_dy + s.c;
  for (int64_t c = 0; c < s.c; ++c) {
    if (global) {
      mu[c] = ctx.Input("Mean")->data<T>()[c];
      inv_std[c] =
          1.0 / std::sqrt(ctx.Input("Variance")->data<T>()[c] + epsilon);
    } else {
      mu[c] = ctx.Input("SavedMean")->data<T>()[c];
      inv_std[c] = ctx.Input("SavedVariance")->data<T>()[c];
    }
    sum_dy[c] = sum_dy_xhat[c] = 0;
  }
  ForEachRow(s, [&](int64_t row, int64_t c) {
    const T* xr = x + row;
    const T* dyr = dy + row;
    const double m = mu[c];
    const double a =
        LaneSum(s.inner, [dyr](int64_t i) { return double{dyr[i]}; });
    const double b = LaneSum(s.inner, [xr, dyr, m](int64_t i) {
      return dyr[i] * (xr[i] - m);
    });
    sum_dy[c] += a;
    sum_dy_xhat[c] += b * inv_std[c];
  });
  if (dbias_t) {
    for (int64_t c = 0; c < s.c; ++c) {
      dbias_t->data<T>()[c] = static_cast<T>(sum_dy[c]);
    }
  }
  if (dscale_t) {
    for (int64_t c = 0; c < s.c; ++c) {
      dscale_t->data<T>()[c] = static_cast<T>(sum_dy_xhat[c]);
    }
  }
  if (dx_t) {
    T* dx = dx_t->data<T>();
    const double n = static_cast<double>(s.count());
    ForEachRow(s, [&](int64_t row, int64_t c) {
      const double k = scale[c] * inv_std[c];
      if (global) {
        for (int64_t i = 0; i < s.inner; ++i) {
          dx[row + i] = static_cast<T>(k * dy[row + i]);
        }
        return;
      }
      // dx = scale * inv_std / n * (n * dy - sum(dy) - x_hat * sum(dy x_hat))
      const double mean_dy = sum_dy[c] / n;
      const double mean_dy_xhat = sum_dy_xhat[c] / n;
      for (int64_t i = 0; i < s.inner; ++i) {
        const double x_hat = (x[row + i] - mu[c]) * inv_std[c];
        dx[row + i] =
            static_cast<T>(k * (dy[row + i] - mean_dy - x_hat * mean_dy_xhat));
      }
    });
  }
  return Status::Ok();
}

}  // namespace

void RegisterBatchNormKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "batch_norm", BatchNormKernel, float, double);
  PAREX_CPU_KERNEL(r, "batch_norm_grad", BatchNormGradKernel, float, double);
}

}  // namespace parex
