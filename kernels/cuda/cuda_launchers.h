// Device launchers: the CUDA kernels of parex behind plain-pointer functions.
// They are defined in the .cu files (elementwise_launchers.cu,
// reduce_launchers.cu) for T = float and double; the op kernels (.cc) plan
// shapes from KernelContexts and call them, so nvcc never sees the program
// headers.
//
// Every launcher queues its work on `stream` and returns the launch status
// (cudaGetLastError); it launches nothing when there are no elements.
// REQUIRES (all): the pointers are device memory of the current device, and
// `stream` belongs to that device. An output may be the same buffer as an
// input of the same shape (element i is read before it is written, by the
// same thread); other overlaps are undefined.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace parex {

// The most dims a general broadcast or reduction handles after merging
// neighbouring dims of the same kind (kernel_plans.h).
inline constexpr int kMaxLaunchRank = 8;
// Inputs summed by one LaunchSum.
inline constexpr int kMaxSumInputs = 8;

enum class BinaryOp : int { kAdd, kSub, kMul, kDiv };
enum class UnaryOp : int { kRelu, kSigmoid, kTanh };

// out[i] = x[i] op y[i] for i < n.
template <typename T>
cudaError_t LaunchBinarySame(BinaryOp op, const T* x, const T* y, T* out,
                             int64_t n, cudaStream_t stream);

// Fluid's mid broadcast: out (and the full operand) viewed as
// [pre, n, post]; the other operand has n elements and is read at the middle
// index. broadcast_y: Y is the small operand (out = x op y[mid]), else X is
// (out = x[mid] op y).
template <typename T>
cudaError_t LaunchBinaryMid(BinaryOp op, bool broadcast_y, const T* x,
                            const T* y, T* out, int64_t pre, int64_t n,
                            int64_t post, cudaStream_t stream);

// Any broadcast: out has `rank` dims of `extents` (row-major); element
// (i_0..i_r-1) reads x at sum(i_d * x_strides[d]) and y likewise (stride 0
// along a broadcast dim).
struct BroadcastShape {
  int rank = 0;
  int64_t extents[kMaxLaunchRank] = {};
  int64_t x_strides[kMaxLaunchRank] = {};
  int64_t y_strides[kMaxLaunchRank] = {};
};
template <typename T>
cudaError_t LaunchBinaryGeneral(BinaryOp op, const BroadcastShape& shape,
                                const T* x, const T* y, T* out,
                                cudaStream_t stream);

// out[i] = f(x[i]): relu max(x, 0), sigmoid 1 / (1 + exp(-x)), tanh.
template <typename T>
cudaError_t LaunchUnary(UnaryOp op, const T* x, T* out, int64_t n,
                        cudaStream_t stream);

// Fluid's scale: s * x + bias when bias_after_scale, else s * (x + bias);
// s = *scale_tensor (one fp32 on the device) when it is not null, else
// `scale`.
template <typename T>
cudaError_t LaunchScale(const T* x, T* out, int64_t n, T scale, T bias,
                        bool bias_after_scale, const float* scale_tensor,
                        cudaStream_t stream);

// out[i] = (accumulate ? out[i] : 0) + inputs[0][i] + ... + inputs[count-1][i].
// REQUIRES: 0 <= count <= kMaxSumInputs.
template <typename T>
cudaError_t LaunchSum(const T* const* inputs, int count, bool accumulate,
                      T* out, int64_t n, cudaStream_t stream);

// outputs[k][i] = inputs[0][i] + ... + inputs[count-1][i] for every output
// (DeviceContext::SumToAll); an output may be an input.
// REQUIRES: 1 <= count, outputs <= kMaxSumInputs.
template <typename T>
cudaError_t LaunchSumToAll(const T* const* inputs, int count, T* const* outputs,
                           int out_count, int64_t n, cudaStream_t stream);

// Sum (or mean when `mean`) of x viewed as [outer, reduce, inner] over the
// middle dim: out[o, i] = sum_r x[o, r, i]. A mean over reduce == 0 is NaN.
template <typename T>
cudaError_t LaunchReduceSum(const T* x, T* out, int64_t outer, int64_t reduce,
                            int64_t inner, bool mean, cudaStream_t stream);

// Sum over several separated dims: output element j (row-major over the kept
// dims) sums x over every index of the reduced dims. Offsets are element
// strides into x.
struct ReduceShape {
  int kept_rank = 0;
  int64_t kept_extents[kMaxLaunchRank] = {};
  int64_t kept_strides[kMaxLaunchRank] = {};
  int reduced_rank = 0;
  int64_t reduced_extents[kMaxLaunchRank] = {};
  int64_t reduced_strides[kMaxLaunchRank] = {};
};
template <typename T>
cudaError_t LaunchReduceSumGeneral(const T* x, T* out, const ReduceShape& shape,
                                   int64_t out_numel, int64_t reduce_count,
                                   bool mean, cudaStream_t stream);

}  // namespace parex
