// Device launchers of batch_norm and batch_norm_grad, with the CPU kernel's
// semantics (kernels/cpu/batch_norm_kernel.cc, graph/ir/ops/norm_ops.cc):
// statistics in double, biased batch variance for the running statistics,
// SavedVariance = 1 / sqrt(variance + epsilon) (the inverse std, not the
// variance). Defined in batch_norm_launchers.cu for T = float and double.
//
// X is viewed as [outer, channels, inner] (NCHW: [N, C, H*W...]; NHWC:
// [N*H*W..., C, 1]). Each channel is cut into BnChunks(view) chunks, one
// block per (chunk, channel); blocks write partial sums in double to a
// scratch of BnScratchDoubles(view) doubles and the next pass adds them in
// chunk order (the same bits every run). As in cuda_launchers.h: work is queued
// on `stream`, the launch status returned; pointers are device memory.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/train_launchers.h"

namespace parex {

struct BnView {
  int64_t outer = 0, channels = 0, inner = 1;
};

// Chunks per channel, and the device scratch (doubles) the launchers need.
int BnChunks(const BnView& view);
int64_t BnScratchDoubles(const BnView& view);

// The forward op's tensors. MeanOut / VarianceOut may be Mean / Variance
// (updated in place).
template <typename T>
struct BnForwardTensors {
  const T *x, *scale, *bias, *mean, *variance;
  T *y, *mean_out, *variance_out, *saved_mean, *saved_inv_std;
};

// global: SavedMean = Mean, SavedVariance = 1 / sqrt(Variance + epsilon),
// MeanOut = Mean, VarianceOut = Variance. Otherwise, with the batch's mean m
// and biased variance v (0 for an empty batch): SavedMean = m, SavedVariance
// = 1 / sqrt(v + epsilon), MeanOut = momentum * Mean + (1 - momentum) * m,
// VarianceOut likewise with v; momentum is the attribute, or the device
// scalar when momentum_tensor.data is not null. Then Y = X * a + b with
// a = SavedVariance * Scale, b = Bias - SavedMean * a, in T.
template <typename T>
cudaError_t LaunchBatchNorm(const BnView& view, const BnForwardTensors<T>& t,
                            bool global, double momentum,
                            DeviceScalar momentum_tensor, double epsilon,
                            double* scratch, cudaStream_t stream);

// The gradient op's tensors; dx, dscale and dbias may be null (not wanted).
// mean / variance are read when global, saved_mean / saved_inv_std otherwise.
template <typename T>
struct BnGradTensors {
  const T *x, *scale, *dy;
  const T *mean, *variance, *saved_mean, *saved_inv_std;
  T *dx, *dscale, *dbias;
};

// With mu, inv_std = Mean, 1 / sqrt(Variance + epsilon) (global) or
// SavedMean, SavedVariance, in double: dbias = sum(dy), dscale =
// sum(dy * (x - mu)) * inv_std, and dx = scale * inv_std * dy (global) or
// scale * inv_std * (dy - sum(dy) / n - x_hat * dscale / n) with
// x_hat = (x - mu) * inv_std and n = outer * inner.
template <typename T>
cudaError_t LaunchBatchNormGrad(const BnView& view, const BnGradTensors<T>& t,
                                bool global, double epsilon, double* scratch,
                                cudaStream_t stream);

}  // namespace parex
