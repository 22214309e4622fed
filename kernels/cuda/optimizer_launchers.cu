// Device kernels of sgd, momentum and adam over dense gradients. Each
// element reads all its inputs before writing its outputs, so every output
// may be its input (ParamOut is Param, ...). The learning rate and beta
// powers are read on the device by every thread (a few loads from cache),
// never copied to the host.
#include <cmath>

#include "kernels/cuda/grid_stride.cuh"
#include "kernels/cuda/train_launchers.h"

namespace parex {
namespace {

using cuda_loops::BlocksFor;
using cuda_loops::FirstIndex;
using cuda_loops::GridStride;
using cuda_loops::kThreads;

__device__ __forceinline__ double Read(DeviceScalar s) {
  return s.is_double ? *static_cast<const double*>(s.data)
                     : static_cast<double>(*static_cast<const float*>(s.data));
}

__device__ __forceinline__ double ReadOr(DeviceScalar s, double fallback) {
  return s.data == nullptr ? fallback : Read(s);
}

// grad[i] plus the addends' element i, summed in order as on the CPU.
template <typename T>
__device__ __forceinline__ T Gradient(const T* grad,
                                      const GradAddends<T>& addends,
                                      int64_t i) {
  T g = grad[i];
  for (int k = 0; k < addends.count; ++k) g += addends.data[k][i];
  return g;
}

template <typename T>
__global__ void SgdKernel(const T* param, const T* grad, GradAddends<T> addends,
                          DeviceScalar lr_scalar, T* param_out, int64_t n) {
  const T lr = static_cast<T>(Read(lr_scalar));
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    param_out[i] = param[i] - lr * Gradient(grad, addends, i);
  }
}

template <typename T>
__global__ void MomentumKernel(const T* param, const T* grad,
                               GradAddends<T> addends, const T* velocity,
                               DeviceScalar lr_scalar, MomentumArgs args,
                               T* param_out, T* velocity_out, int64_t n) {
  const T lr = static_cast<T>(Read(lr_scalar));
  const T mu = static_cast<T>(args.mu);
  const T rescale = static_cast<T>(args.rescale);
  const T l2 = static_cast<T>(args.l2);
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    const T p = param[i];
    const T g = rescale * Gradient(grad, addends, i) + l2 * p;
    const T v = mu * velocity[i] + g;
    velocity_out[i] = v;
    param_out[i] = args.nesterov ? p - (g + mu * v) * lr : p - lr * v;
  }
}

template <typename T>
__global__ void AdamKernel(const T* param, const T* grad,
                           GradAddends<T> addends, const T* m1, const T* m2,
                           AdamScalars s, T* param_out, T* m1_out, T* m2_out,
                           int64_t n) {
  const double beta1_pow = Read(s.beta1_pow);
  const double beta2_pow = Read(s.beta2_pow);
  const T b1 = static_cast<T>(ReadOr(s.beta1_tensor, s.beta1));
  const T b2 = static_cast<T>(ReadOr(s.beta2_tensor, s.beta2));
  const double epsilon = ReadOr(s.epsilon_tensor, s.epsilon);
  const T lr_t =
      static_cast<T>(Read(s.lr) * sqrt(1 - beta2_pow) / (1 - beta1_pow));
  const T eps_t = static_cast<T>(epsilon * sqrt(1 - beta2_pow));
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    const T g = Gradient(grad, addends, i);
    const T m = b1 * m1[i] + (T(1) - b1) * g;
    const T v = b2 * m2[i] + (T(1) - b2) * g * g;
    m1_out[i] = m;
    m2_out[i] = v;
    param_out[i] = param[i] - lr_t * (m / (sqrt(v) + eps_t));
  }
}

__device__ void WriteScalar(void* out, bool is_double, double value) {
  if (is_double) {
    *static_cast<double*>(out) = value;
  } else {
    *static_cast<float*>(out) = static_cast<float>(value);
  }
}

__global__ void AdamBetaPowsKernel(AdamScalars s, void* beta1_pow_out,
                                   bool beta1_is_double, void* beta2_pow_out,
                                   bool beta2_is_double) {
  const double beta1 = ReadOr(s.beta1_tensor, s.beta1);
  const double beta2 = ReadOr(s.beta2_tensor, s.beta2);
  const double b1p = Read(s.beta1_pow), b2p = Read(s.beta2_pow);
  if (beta1_pow_out) WriteScalar(beta1_pow_out, beta1_is_double, b1p * beta1);
  if (beta2_pow_out) WriteScalar(beta2_pow_out, beta2_is_double, b2p * beta2);
}

}  // namespace

template <typename T>
cudaError_t LaunchSgd(const T* param, const T* grad,
                      const GradAddends<T>& addends, DeviceScalar lr,
                      T* param_out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  SgdKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(param, grad, addends, lr,
                                                      param_out, n);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchMomentum(const T* param, const T* grad,
                           const GradAddends<T>& addends, const T* velocity,
                           DeviceScalar lr, const MomentumArgs& args,
                           T* param_out, T* velocity_out, int64_t n,
                           cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  MomentumKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
      param, grad, addends, velocity, lr, args, param_out, velocity_out, n);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchAdam(const T* param, const T* grad,
                       const GradAddends<T>& addends, const T* m1, const T* m2,
                       const AdamScalars& scalars, T* param_out, T* m1_out,
                       T* m2_out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  AdamKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
      param, grad, addends, m1, m2, scalars, param_out, m1_out, m2_out, n);
  return cudaGetLastError();
}

cudaError_t LaunchAdamBetaPows(const AdamScalars& scalars, void* beta1_pow_out,
                               bool beta1_pow_is_double, void* beta2_pow_out,
                               bool beta2_pow_is_double, cudaStream_t stream) {
  if (beta1_pow_out == nullptr && beta2_pow_out == nullptr) return cudaSuccess;
  AdamBetaPowsKernel<<<1, 1, 0, stream>>>(scalars, beta1_pow_out,
                                          beta1_pow_is_double, beta2_pow_out,
                                          beta2_pow_is_double);
  return cudaGetLastError();
}

#define PAREX_INSTANTIATE(T)                                                   \
  template cudaError_t LaunchSgd<T>(const T*, const T*, const GradAddends<T>&, \
                                    DeviceScalar, T*, int64_t, cudaStream_t);  \
  template cudaError_t LaunchMomentum<T>(                                      \
      const T*, const T*, const GradAddends<T>&, const T*, DeviceScalar,       \
      const MomentumArgs&, T*, T*, int64_t, cudaStream_t);                     \
  template cudaError_t LaunchAdam<T>(                                          \
      const T*, const T*, const GradAddends<T>&, const T*, const T*,           \
      const AdamScalars&, T*, T*, T*, int64_t, cudaStream_t);
PAREX_INSTANTIATE(float)
PAREX_INSTANTIATE(double)
#undef PAREX_INSTANTIATE

}  // namespace parex
