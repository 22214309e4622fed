// Device launchers of the transformer ops: strided gathers (transpose2 and
// its gradient, the reduce gradients' broadcast), gelu and its gradient,
// layer_norm and its gradient, and lookup_table_v2's gather and scatter.
// Defined in transformer_launchers.cu for T = float and double; the op
// kernels (.cc) check shapes and attributes and call them.
//
// As in cuda_launchers.h: every launcher queues its work on `stream`, returns
// the launch status and launches nothing for an empty range; pointers are
// device memory of the stream's device.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace parex {

// ---- strided gather ----
inline constexpr int kMaxGatherRank = 16;
// dst is row-major over `extents`; element (i_0, ..., i_r-1) reads
// src[sum_d i_d * src_strides[d]].
struct GatherShape {
  int rank = 0;
  int64_t extents[kMaxGatherRank] = {};
  int64_t src_strides[kMaxGatherRank] = {};
};
// dst[i] = src[offset(i)] (scaled: times `scale`), n = prod(extents).
// REQUIRES: dst does not overlap src.
template <typename T>
cudaError_t LaunchGather(const T* src, T* dst, const GatherShape& shape,
                         int64_t n, bool scaled, T scale, cudaStream_t stream);

// ---- gelu ----
// approximate: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)));
// else 0.5 x (1 + erf(x / sqrt 2)). out may be x.
template <typename T>
cudaError_t LaunchGelu(const T* x, T* out, int64_t n, bool approximate,
                       cudaStream_t stream);
// dx = dout * d gelu(x) / dx, the same forms. dx may be x or dout.
template <typename T>
cudaError_t LaunchGeluGrad(const T* x, const T* dout, T* dx, int64_t n,
                           bool approximate, cudaStream_t stream);

// ---- layer_norm ----
// x viewed as [rows, cols]; per row mean and population variance var,
// y = (x - mean) / sqrt(var + eps) * scale + bias (scale / bias may be
// null: 1 / 0). mean / var (rows each) may be null.
template <typename T>
cudaError_t LaunchLayerNorm(const T* x, const T* scale, const T* bias, T* y,
                            T* mean, T* var, int64_t rows, int64_t cols,
                            T epsilon, cudaStream_t stream);
// With rstd = 1 / sqrt(var + eps), x_hat = (x - mean) rstd, g = dy * scale:
//   dx = rstd (g - mean_row(g) - x_hat mean_row(g x_hat))
//   dscale = sum over rows of dy x_hat, dbias = sum over rows of dy.
// Any of dx, dscale, dbias may be null (not computed); scale may be null.
template <typename T>
cudaError_t LaunchLayerNormGrad(const T* x, const T* scale, const T* mean,
                                const T* var, const T* dy, T* dx, T* dscale,
                                T* dbias, int64_t rows, int64_t cols, T epsilon,
                                cudaStream_t stream);

// ---- lookup_table_v2 ----
// Ids, int64 or int32 (`count` of them).
struct LookupIds {
  const void* data = nullptr;
  bool is_int32 = false;
  int64_t padding_idx = -1;  // -1: none
};
// out[i, :] = table[ids[i], :] (width columns), zeros where ids[i] ==
// padding_idx. An id outside [0, table_rows) gives a NaN row: the device
// cannot fail the op as the CPU kernel does.
template <typename T>
cudaError_t LaunchLookup(const T* table, const LookupIds& ids, T* out,
                         int64_t count, int64_t table_rows, int64_t width,
                         cudaStream_t stream);
// dtable = 0, then dtable[ids[i], :] += dout[i, :] for ids[i] != padding_idx
// (ids outside [0, table_rows) are skipped), summed per table row in the
// order of i (one thread per table column walks every id: the same bits every
// run).
template <typename T>
cudaError_t LaunchLookupGrad(const LookupIds& ids, const T* dout, T* dtable,
                             int64_t count, int64_t table_rows, int64_t width,
                             cudaStream_t stream);

}  // namespace parex
