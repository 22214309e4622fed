// Device launchers of the training ops: softmax and softmax with
// cross-entropy, the activation, mean and binary element-wise gradients,
// top_k and accuracy, and the optimizers (sgd, momentum, adam). Defined in
// softmax_launchers.cu, grad_launchers.cu, metric_launchers.cu and
// optimizer_launchers.cu for T = float and double; the op kernels (.cc)
// check shapes and attributes and call them.
//
// As in cuda_launchers.h: every launcher queues its work on `stream`, returns
// the launch status and launches nothing for an empty range; pointers are
// device memory of the stream's device. Scalars that live in tensors (the
// learning rate, the beta powers, mean's upstream gradient) are read on the
// device, never copied to the host, so a step's work never waits for the
// host and can be captured in a CUDA graph.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace parex {

// A one-element tensor on the device, fp32 or fp64, read as double.
struct DeviceScalar {
  const void* data = nullptr;
  bool is_double = false;
};

// ---- softmax ----
// x viewed as [outer, n, inner], normalised along the middle dim:
// y[o,k,i] = exp(x[o,k,i] - max_k - log(sum_k exp(x[o,k,i] - max_k))).
// y may be x.
template <typename T>
cudaError_t LaunchSoftmax(const T* x, T* y, int64_t outer, int64_t n,
                          int64_t inner, cudaStream_t stream);

// Labels of softmax_with_cross_entropy: hard (int64 or int32, one per row of
// the collapsed [outer, 1, inner] view) or soft (T, the logits' shape).
struct SoftmaxLabels {
  const void* data = nullptr;
  bool soft = false;
  bool is_int32 = false;  // hard labels only
  int64_t ignore_index = -100;
};

// softmax_with_cross_entropy: softmax as above, and per row
//   loss = -(x[label] - max - log_sum)              (hard; 0 when ignored)
//   loss = -sum_k label[k] * (x[k] - max - log_sum)  (soft).
// A hard label outside [0, n) that is not ignore_index gives a NaN loss
// (the device does not stop; parex checks fed labels on the host).
template <typename T>
cudaError_t LaunchSoftmaxCrossEntropy(const T* logits,
                                      const SoftmaxLabels& labels, T* softmax,
                                      T* loss, int64_t outer, int64_t n,
                                      int64_t inner, cudaStream_t stream);

// dlogits = (softmax - onehot(label)) * dloss[row] (hard; 0 on ignored rows)
// or (softmax - label) * dloss[row] (soft).
template <typename T>
cudaError_t LaunchSoftmaxCrossEntropyGrad(const T* softmax,
                                          const SoftmaxLabels& labels,
                                          const T* dloss, T* dlogits,
                                          int64_t outer, int64_t n,
                                          int64_t inner, cudaStream_t stream);

// softmax_grad: dx = out * (dout - sum_k(dout * out)) along the middle dim.
template <typename T>
cudaError_t LaunchSoftmaxGrad(const T* out, const T* dout, T* dx, int64_t outer,
                              int64_t n, int64_t inner, cudaStream_t stream);

// ---- gradients of element-wise ops ----
enum class ActivationGrad : int {
  kRelu,     // dx = out > 0 ? dout : 0
  kSigmoid,  // dx = dout * out * (1 - out)
  kTanh,     // dx = dout * (1 - out * out)
};
template <typename T>
cudaError_t LaunchActivationGrad(ActivationGrad op, const T* out, const T* dout,
                                 T* dx, int64_t n, cudaStream_t stream);

// mean_grad: dx[i] = dout[0] / n for i < n.
template <typename T>
cudaError_t LaunchMeanGrad(const T* dout, T* dx, int64_t n,
                           cudaStream_t stream);

// ---- gradients of the binary element-wise ops ----
enum class BinaryGrad : int { kAdd, kSub, kMul, kDiv, kMax, kMin };
// Out's index space: `rank` dims of `extents`; X, Y and Out (Out@GRAD too)
// read at strides along them (0 where an operand repeats; Out's are its
// row-major strides).
inline constexpr int kMaxGradRank = 8;
struct GradShape {
  int rank = 0;
  int64_t extents[kMaxGradRank] = {};
  int64_t x_strides[kMaxGradRank] = {};
  int64_t y_strides[kMaxGradRank] = {};
};
// contrib[i] = d(op)/d(X or Y) at Out element i times dout[i], as the CPU
// kernels define it (add: dout; sub: dout, -dout; mul: dout*y, dout*x;
// div: dout/y, -dout*out/y; max/min: dout where that operand won (ties to
// Y for max's >, to Y for min's <), else 0). `x` and `out` may be null when
// the op does not read them. contrib is Out-shaped; summing it over the
// operand's repeated dims gives the operand's gradient.
template <typename T>
cudaError_t LaunchBinaryGradContrib(BinaryGrad op, bool wrt_y,
                                    const GradShape& shape, const T* x,
                                    const T* y, const T* out, const T* dout,
                                    T* contrib, cudaStream_t stream);

// dropout: out[i] = mask[i] ? x[i] / keep : 0 (keep is 1 - p with
// upscale_in_train, else 1; dividing, as Fluid does).
template <typename T>
cudaError_t LaunchDropoutApply(const T* x, const uint8_t* mask, T keep, T* out,
                               int64_t n, cudaStream_t stream);

// ---- metrics ----
// top_k (v1): per [outer, inner] slot of x viewed as [outer, n, inner], the
// k largest values in order, ties to the lower index; out and indices are
// [outer, k, inner].
template <typename T>
cudaError_t LaunchTopK(const T* x, T* out, int64_t* indices, int64_t outer,
                       int64_t n, int64_t inner, int64_t k,
                       cudaStream_t stream);
// accuracy: correct = rows whose label is among their k indices;
// *accuracy = correct / rows (0 without rows), *correct, *total = rows.
cudaError_t LaunchAccuracy(const int64_t* indices, const int64_t* labels,
                           int64_t rows, int64_t k, float* accuracy,
                           int32_t* correct, int32_t* total,
                           cudaStream_t stream);

// ---- optimizers (dense gradients) ----
// Gradient addends (Reduce mode's optimizer slices): other places'
// gradients, added onto grad element by element, in order.
inline constexpr int kMaxGradAddends = 8;
template <typename T>
struct GradAddends {
  const T* data[kMaxGradAddends] = {};
  int count = 0;
};

// param_out = param - lr * grad.
template <typename T>
cudaError_t LaunchSgd(const T* param, const T* grad,
                      const GradAddends<T>& addends, DeviceScalar lr,
                      T* param_out, int64_t n, cudaStream_t stream);

// g = rescale * grad + l2 * param; v_out = mu * v + g;
// param_out = param - (g + mu * v_out) * lr (nesterov) or param - lr * v_out.
struct MomentumArgs {
  double mu = 0, rescale = 1, l2 = 0;
  bool nesterov = false;
};
template <typename T>
cudaError_t LaunchMomentum(const T* param, const T* grad,
                           const GradAddends<T>& addends, const T* velocity,
                           DeviceScalar lr, const MomentumArgs& args,
                           T* param_out, T* velocity_out, int64_t n,
                           cudaStream_t stream);

// Fluid's Adam, with lr_t = lr * sqrt(1 - beta2_pow) / (1 - beta1_pow) and
// eps_t = epsilon * sqrt(1 - beta2_pow) computed in double from the device
// scalars, then rounded to T (as the CPU kernel does):
//   m1_out = beta1 * m1 + (1 - beta1) * g; m2_out = beta2 * m2 + (1 - beta2)
//   g^2 param_out = param - lr_t * (m1_out / (sqrt(m2_out) + eps_t)).
// beta1/beta2/epsilon: the attribute values, or the tensors when not null.
struct AdamScalars {
  DeviceScalar lr, beta1_pow, beta2_pow;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  DeviceScalar beta1_tensor, beta2_tensor, epsilon_tensor;  // optional
};
template <typename T>
cudaError_t LaunchAdam(const T* param, const T* grad,
                       const GradAddends<T>& addends, const T* m1, const T* m2,
                       const AdamScalars& scalars, T* param_out, T* m1_out,
                       T* m2_out, int64_t n, cudaStream_t stream);

// beta_pow_out = beta_pow * beta (in double, rounded to the output's type),
// after LaunchAdam on the same stream (the update reads the old value;
// beta_pow_out may be beta_pow). Either output may be null.
cudaError_t LaunchAdamBetaPows(const AdamScalars& scalars, void* beta1_pow_out,
                               bool beta1_pow_is_double, void* beta2_pow_out,
                               bool beta2_pow_is_double, cudaStream_t stream);

}  // namespace parex
