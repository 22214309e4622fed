// batch_norm and batch_norm_grad on CPU, for NCHW (rank 2..5) and NHWC, and
// the stages of synchronised batch norm (graph/builder/sync_batch_norm.h). X is
// viewed as [outer, C, inner]: NCHW gives [N, C, H*W...] (a 2-D [N, C] has
// inner 1), NHWC gives [N*H*W, C, 1]. Semantics: graph/ir/ops/norm_ops.cc.
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
  // NHWC: X is `outer` rows of C channels, and the loops run along the
  // rows, every channel at once (one element per ForEachRow call would
  // cost a call per element: ResNet-18's training batch norms 6x slower).
  bool rows = false;
  int64_t count() const { return outer * inner; }  // elements per channel
};

BnShape GetBnShape(const KernelContext& ctx, const Dims& x) {
  BnShape s;
  const int64_t numel = Numel(x);
  if (ctx.Attr<std::string>("data_layout") == "NHWC") {
    s.c = x.back();
    s.outer = s.c == 0 ? 0 : numel / s.c;
    s.rows = true;
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

// Per-thread per-channel accumulators; they only grow. `second`: another
// buffer, for a helper whose caller holds the first.
std::vector<double>& Scratch(size_t n, bool second = false) {
  thread_local std::vector<double> buffers[2];
  std::vector<double>& buffer = buffers[second ? 1 : 0];
  if (buffer.size() < n) buffer.resize(n);
  return buffer;
}

// f(x_row, y_row) for each NHWC row of C channels of one or two tensors.
template <typename F>
void ForEachChannelRow(const BnShape& s, F f) {
  for (int64_t o = 0; o < s.outer; ++o) f(o * s.c);
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

// Per channel sums of X (in double), then of its squared deviations from
// `mean`: the two passes of the batch statistics.
template <typename T>
void ChannelSums(const BnShape& s, const T* x, double* sum) {
  std::fill_n(sum, s.c, 0.0);
  if (s.rows) {
    ForEachChannelRow(s, [&](int64_t at) {
      for (int64_t c = 0; c < s.c; ++c) sum[c] += double{x[at + c]};
    });
    return;
  }
  ForEachRow(s, [&](int64_t row, int64_t c) {
    const T* xr = x + row;
    sum[c] += LaneSum(s.inner, [xr](int64_t i) { return double{xr[i]}; });
  });
}

template <typename T>
void ChannelSquaredDeviations(const BnShape& s, const T* x, const double* mean,
                              double* sq) {
  std::fill_n(sq, s.c, 0.0);
  if (s.rows) {
    ForEachChannelRow(s, [&](int64_t at) {
      for (int64_t c = 0; c < s.c; ++c) {
        const double d = x[at + c] - mean[c];
        sq[c] += d * d;
      }
    });
    return;
  }
  ForEachRow(s, [&](int64_t row, int64_t c) {
    const T* xr = x + row;
    const double m = mean[c];
    sq[c] += LaneSum(s.inner, [xr, m](int64_t i) {
      const double d = xr[i] - m;
      return d * d;
    });
  });
}

// The forward op's outputs for batch statistics `mean` / `var` (biased):
// the saved statistics, the running ones and Y.
template <typename T>
struct BnForward {
  const T *x, *scale, *bias, *mean, *variance;
  T *y, *mean_out, *variance_out, *saved_mean, *saved_inv_std;

  explicit BnForward(KernelContext& ctx)
      : x(ctx.Input("X")->data<T>()),
        scale(ctx.Input("Scale")->data<T>()),
        bias(ctx.Input("Bias")->data<T>()),
        mean(ctx.Input("Mean")->data<T>()),
        variance(ctx.Input("Variance")->data<T>()),
        y(ctx.Output("Y")->data<T>()),
        mean_out(ctx.Output("MeanOut")->data<T>()),
        variance_out(ctx.Output("VarianceOut")->data<T>()),
        saved_mean(ctx.Output("SavedMean")->data<T>()),
        saved_inv_std(ctx.Output("SavedVariance")->data<T>()) {}

  void SaveBatchStatistics(int64_t c, double batch_mean, double var,
                           double momentum, double epsilon) {
    saved_mean[c] = static_cast<T>(batch_mean);
    saved_inv_std[c] = static_cast<T>(1.0 / std::sqrt(var + epsilon));
    mean_out[c] =
        static_cast<T>(momentum * mean[c] + (1 - momentum) * batch_mean);
    variance_out[c] =
        static_cast<T>(momentum * variance[c] + (1 - momentum) * var);
  }

  // y = (x - mean) * inv_std * scale + bias = x * a + b per channel.
  void Normalize(const BnShape& s) {
    if (s.rows) {
      std::vector<double>& ab = Scratch(2 * s.c, /*second=*/true);
      for (int64_t c = 0; c < s.c; ++c) {
        const T a = saved_inv_std[c] * scale[c];
        ab[c] = a;
        ab[s.c + c] = bias[c] - saved_mean[c] * a;
      }
      ForEachChannelRow(s, [&](int64_t at) {
        for (int64_t c = 0; c < s.c; ++c) {
          y[at + c] =
              x[at + c] * static_cast<T>(ab[c]) + static_cast<T>(ab[s.c + c]);
        }
      });
      return;
    }
    ForEachRow(s, [&](int64_t row, int64_t c) {
      const T a = saved_inv_std[c] * scale[c];
      const T b = bias[c] - saved_mean[c] * a;
      for (int64_t i = 0; i < s.inner; ++i) y[row + i] = x[row + i] * a + b;
    });
  }
};

StatusOr<double> Momentum(const KernelContext& ctx) {
  double momentum = ctx.Attr<float>("momentum");
  if (const Tensor* m = ctx.Input("MomentumTensor")) {
    if (m->dtype() != DType::kFP32 && m->dtype() != DType::kFP64) {
      return ctx.Error("MomentumTensor must be fp32 or fp64");
    }
    momentum = ScalarOf<double>(*m);
  }
  return momentum;
}

template <typename T>
Status BatchNormKernel(KernelContext& ctx) {
  const Tensor& x_t = *ctx.Input("X");
  const BnShape s = GetBnShape(ctx, x_t.dims());
  const double epsilon = ctx.Attr<float>("epsilon");
  PAREX_ASSIGN_OR_RETURN(const double momentum, Momentum(ctx));
  const bool global =
      (ctx.Attr<bool>("is_test") && !ctx.Attr<bool>("trainable_statistics")) ||
      ctx.Attr<bool>("use_global_stats");
  BnForward<T> f(ctx);
  if (global) {
    for (int64_t c = 0; c < s.c; ++c) {
      f.saved_mean[c] = f.mean[c];
      f.saved_inv_std[c] =
          static_cast<T>(1.0 / std::sqrt(f.variance[c] + epsilon));
      f.mean_out[c] = f.mean[c];
      f.variance_out[c] = f.variance[c];
    }
  } else {
    // Two passes (mean, then squared deviations), each row summed in double.
    std::vector<double>& acc = Scratch(2 * s.c);
    double* mean = acc.data();
    double* sq = acc.data() + s.c;
    ChannelSums(s, f.x, mean);
    const double n = static_cast<double>(s.count());
    for (int64_t c = 0; c < s.c; ++c) mean[c] = n > 0 ? mean[c] / n : 0.0;
    ChannelSquaredDeviations(s, f.x, mean, sq);
    for (int64_t c = 0; c < s.c; ++c) {
      f.SaveBatchStatistics(c, mean[c], n > 0 ? sq[c] / n : 0.0, momentum,
                            epsilon);
    }
  }
  f.Normalize(s);
  return Status::Ok();
}

// ---- synchronised batch norm's stages (graph/builder/sync_batch_norm.h)
// ------- The statistics of the whole batch over every place: each place sums
// its rows, the sums are all-reduced between the stages, and every place then
// finishes with the same numbers, as batch_norm does over the whole batch.

// Sum [C + 1] (double) = each channel's sum of X, then the element count.
template <typename T>
Status SyncBnSumKernel(KernelContext& ctx) {
  const Tensor& x_t = *ctx.Input("X");
  const BnShape s = GetBnShape(ctx, x_t.dims());
  double* sum = ctx.Output("Sum")->data<double>();
  ChannelSums(s, x_t.data<T>(), sum);
  sum[s.c] = static_cast<double>(s.count());
  return Status::Ok();
}

// The mean of channel c from the all-reduced Sum; 0 for an empty batch.
double MeanOf(const double* sum, int64_t c, int64_t channels) {
  const double n = sum[channels];
  return n > 0 ? sum[c] / n : 0.0;
}

// SqDev [C] (double) = each channel's sum of (X - mean)^2.
template <typename T>
Status SyncBnSqDevKernel(KernelContext& ctx) {
  const Tensor& x_t = *ctx.Input("X");
  const BnShape s = GetBnShape(ctx, x_t.dims());
  const double* sum = ctx.Input("Sum")->data<double>();
  std::vector<double>& mean = Scratch(s.c);
  for (int64_t c = 0; c < s.c; ++c) mean[c] = MeanOf(sum, c, s.c);
  ChannelSquaredDeviations(s, x_t.data<T>(), mean.data(),
                           ctx.Output("SqDev")->data<double>());
  return Status::Ok();
}

// batch_norm's outputs from the all-reduced Sum and SqDev.
template <typename T>
Status SyncBnApplyKernel(KernelContext& ctx) {
  const BnShape s = GetBnShape(ctx, ctx.Input("X")->dims());
  const double epsilon = ctx.Attr<float>("epsilon");
  PAREX_ASSIGN_OR_RETURN(const double momentum, Momentum(ctx));
  const double* sum = ctx.Input("Sum")->data<double>();
  const double* sq = ctx.Input("SqDev")->data<double>();
  const double n = sum[s.c];
  BnForward<T> f(ctx);
  for (int64_t c = 0; c < s.c; ++c) {
    f.SaveBatchStatistics(c, MeanOf(sum, c, s.c), n > 0 ? sq[c] / n : 0.0,
                          momentum, epsilon);
  }
  f.Normalize(s);
  return Status::Ok();
}

// Per channel sum(dy) and sum(dy * x_hat), x_hat = (x - mu) * inv_std.
template <typename T>
void GradSums(const BnShape& s, const T* x, const T* dy, const double* mu,
              const double* inv_std, double* sum_dy, double* sum_dy_xhat) {
  std::fill_n(sum_dy, s.c, 0.0);
  std::fill_n(sum_dy_xhat, s.c, 0.0);
  if (s.rows) {
    // sum(dy * (x - mu)) per channel, then times inv_std.
    ForEachChannelRow(s, [&](int64_t at) {
      for (int64_t c = 0; c < s.c; ++c) {
        sum_dy[c] += double{dy[at + c]};
        sum_dy_xhat[c] += double{dy[at + c]} * (x[at + c] - mu[c]);
      }
    });
    for (int64_t c = 0; c < s.c; ++c) sum_dy_xhat[c] *= inv_std[c];
    return;
  }
  ForEachRow(s, [&](int64_t row, int64_t c) {
    const T* xr = x + row;
    const T* dyr = dy + row;
    const double m = mu[c];
    const double a =
        LaneSum(s.inner, [dyr](int64_t i) { return double{dyr[i]}; });
    const double b = LaneSum(
        s.inner, [xr, dyr, m](int64_t i) { return dyr[i] * (xr[i] - m); });
    sum_dy[c] += a;
    sum_dy_xhat[c] += b * inv_std[c];
  });
}

// X@GRAD with batch statistics over n elements per channel:
// dx = scale * inv_std / n * (n * dy - sum(dy) - x_hat * sum(dy x_hat)).
template <typename T>
void InputGrad(const BnShape& s, double n, const T* x, const T* dy,
               const T* scale, const double* mu, const double* inv_std,
               const double* sum_dy, const double* sum_dy_xhat, T* dx) {
  if (s.rows) {
    std::vector<double>& terms = Scratch(3 * s.c, /*second=*/true);
    double* k = terms.data();
    double* mean_dy = k + s.c;
    double* mean_dy_xhat = mean_dy + s.c;
    for (int64_t c = 0; c < s.c; ++c) {
      k[c] = scale[c] * inv_std[c];
      mean_dy[c] = sum_dy[c] / n;
      mean_dy_xhat[c] = sum_dy_xhat[c] / n;
    }
    ForEachChannelRow(s, [&](int64_t at) {
      for (int64_t c = 0; c < s.c; ++c) {
        const double x_hat = (x[at + c] - mu[c]) * inv_std[c];
        dx[at + c] = static_cast<T>(
            k[c] * (dy[at + c] - mean_dy[c] - x_hat * mean_dy_xhat[c]));
      }
    });
    return;
  }
  ForEachRow(s, [&](int64_t row, int64_t c) {
    const double k = scale[c] * inv_std[c];
    const double mean_dy = sum_dy[c] / n;
    const double mean_dy_xhat = sum_dy_xhat[c] / n;
    for (int64_t i = 0; i < s.inner; ++i) {
      const double x_hat = (x[row + i] - mu[c]) * inv_std[c];
      dx[row + i] =
          static_cast<T>(k * (dy[row + i] - mean_dy - x_hat * mean_dy_xhat));
    }
  });
}

// The saved batch statistics as doubles: mu and inv_std, [C] each.
template <typename T>
void SavedStatistics(const KernelContext& ctx, int64_t channels, double* mu,
                     double* inv_std) {
  const T* saved_mean = ctx.Input("SavedMean")->data<T>();
  const T* saved_inv_std = ctx.Input("SavedVariance")->data<T>();
  for (int64_t c = 0; c < channels; ++c) {
    mu[c] = saved_mean[c];
    inv_std[c] = saved_inv_std[c];
  }
}

// Scale@GRAD = sum(dy * x_hat), Bias@GRAD = sum(dy), where bound.
template <typename T>
void ParameterGrads(KernelContext& ctx, int64_t channels, const double* sum_dy,
                    const double* sum_dy_xhat) {
  if (Tensor* dbias = ctx.Output("Bias@GRAD")) {
    for (int64_t c = 0; c < channels; ++c) {
      dbias->data<T>()[c] = static_cast<T>(sum_dy[c]);
    }
  }
  if (Tensor* dscale = ctx.Output("Scale@GRAD")) {
    for (int64_t c = 0; c < channels; ++c) {
      dscale->data<T>()[c] = static_cast<T>(sum_dy_xhat[c]);
    }
  }
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

  // Per channel: mean, inverse std, sum(dy), sum(dy * x_hat).
  std::vector<double>& acc = Scratch(4 * s.c);
  double* mu = acc.data();
  double* inv_std = mu + s.c;
  double* sum_dy = inv_std + s.c;
  double* sum_dy_xhat = sum_dy + s.c;
  if (global) {
    for (int64_t c = 0; c < s.c; ++c) {
      mu[c] = ctx.Input("Mean")->data<T>()[c];
      inv_std[c] =
          1.0 / std::sqrt(ctx.Input("Variance")->data<T>()[c] + epsilon);
    }
  } else {
    SavedStatistics<T>(ctx, s.c, mu, inv_std);
  }
  GradSums(s, x, dy, mu, inv_std, sum_dy, sum_dy_xhat);
  ParameterGrads<T>(ctx, s.c, sum_dy, sum_dy_xhat);
  Tensor* dx_t = ctx.Output("X@GRAD");
  if (dx_t == nullptr) return Status::Ok();
  T* dx = dx_t->data<T>();
  if (global) {
    ForEachRow(s, [&](int64_t row, int64_t c) {
      const double k = scale[c] * inv_std[c];
      for (int64_t i = 0; i < s.inner; ++i) {
        dx[row + i] = static_cast<T>(k * dy[row + i]);
      }
    });
    return Status::Ok();
  }
  InputGrad(s, static_cast<double>(s.count()), x, dy, scale, mu, inv_std,
            sum_dy, sum_dy_xhat, dx);
  return Status::Ok();
}

// GradSum [2C] (double) = this place's sum(dy), then sum(dy * x_hat); the
// place's own Scale@GRAD / Bias@GRAD (the gradient all-reduce adds them).
template <typename T>
Status SyncBnGradSumKernel(KernelContext& ctx) {
  const Tensor& x_t = *ctx.Input("X");
  const BnShape s = GetBnShape(ctx, x_t.dims());
  std::vector<double>& acc = Scratch(2 * s.c);
  double* mu = acc.data();
  double* inv_std = mu + s.c;
  SavedStatistics<T>(ctx, s.c, mu, inv_std);
  double* sums = ctx.Output("GradSum")->data<double>();
  GradSums(s, x_t.data<T>(), ctx.Input("Y@GRAD")->data<T>(), mu, inv_std, sums,
           sums + s.c);
  ParameterGrads<T>(ctx, s.c, sums, sums + s.c);
  return Status::Ok();
}

// X@GRAD from the all-reduced GradSum and the element count in Sum.
template <typename T>
Status SyncBnGradApplyKernel(KernelContext& ctx) {
  const Tensor& x_t = *ctx.Input("X");
  const BnShape s = GetBnShape(ctx, x_t.dims());
  std::vector<double>& acc = Scratch(2 * s.c);
  double* mu = acc.data();
  double* inv_std = mu + s.c;
  SavedStatistics<T>(ctx, s.c, mu, inv_std);
  const double* sums = ctx.Input("GradSum")->data<double>();
  const double n = ctx.Input("Sum")->data<double>()[s.c];
  InputGrad(s, n, x_t.data<T>(), ctx.Input("Y@GRAD")->data<T>(),
            ctx.Input("Scale")->data<T>(), mu, inv_std, sums, sums + s.c,
            ctx.Output("X@GRAD")->data<T>());
  return Status::Ok();
}

}  // namespace

void RegisterBatchNormKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "batch_norm", BatchNormKernel, float, double);
  PAREX_CPU_KERNEL(r, "batch_norm_grad", BatchNormGradKernel, float, double);
  // A program's own sync_batch_norm: on one place it is batch_norm; over
  // several, graph/builder/sync_batch_norm.h replaces it with the stages.
  PAREX_CPU_KERNEL(r, "sync_batch_norm", BatchNormKernel, float, double);
  PAREX_CPU_KERNEL(r, "sync_batch_norm_grad", BatchNormGradKernel, float,
                   double);
  PAREX_CPU_KERNEL(r, "sync_bn_sum", SyncBnSumKernel, float, double);
  PAREX_CPU_KERNEL(r, "sync_bn_sq_dev", SyncBnSqDevKernel, float, double);
  PAREX_CPU_KERNEL(r, "sync_bn_apply", SyncBnApplyKernel, float, double);
  PAREX_CPU_KERNEL(r, "sync_bn_grad_sum", SyncBnGradSumKernel, float, double);
  PAREX_CPU_KERNEL(r, "sync_bn_grad_apply", SyncBnGradApplyKernel, float,
                   double);
}

}  // namespace parex
