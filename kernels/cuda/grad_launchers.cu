// Device kernels of the activation gradients and mean's gradient:
// element-wise grid-stride loops.
#include "kernels/cuda/grid_stride.cuh"
#include "kernels/cuda/train_launchers.h"

namespace parex {
namespace {

using cuda_loops::BlocksFor;
using cuda_loops::FirstIndex;
using cuda_loops::GridStride;
using cuda_loops::kThreads;

template <typename T>
__global__ void ActivationGradKernel(ActivationGrad op, const T* out,
                                     const T* dout, T* dx, int64_t n) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    const T o = out[i];
    const T d = dout[i];
    switch (op) {
      case ActivationGrad::kRelu:
        dx[i] = o > T(0) ? d : T(0);
        break;
      case ActivationGrad::kSigmoid:
        dx[i] = d * o * (T(1) - o);
        break;
      case ActivationGrad::kTanh:
        dx[i] = d * (T(1) - o * o);
        break;
    }
  }
}

template <typename T>
__global__ void MeanGradKernel(const T* dout, T* dx, int64_t n) {
  const T value = dout[0] / static_cast<T>(n);
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) dx[i] = value;
}

}  // namespace

template <typename T>
cudaError_t LaunchActivationGrad(ActivationGrad op, const T* out, const T* dout,
                                 T* dx, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  ActivationGradKernel<T>
      <<<BlocksFor(n), kThreads, 0, stream>>>(op, out, dout, dx, n);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchMeanGrad(const T* dout, T* dx, int64_t n,
                           cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  MeanGradKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(dout, dx, n);
  return cudaGetLastError();
}

#define PAREX_INSTANTIATE(T)                                          \
  template cudaError_t LaunchActivationGrad<T>(                       \
      ActivationGrad, const T*, const T*, T*, int64_t, cudaStream_t); \
  template cudaError_t LaunchMeanGrad<T>(const T*, T*, int64_t, cudaStream_t);
PAREX_INSTANTIATE(float)
PAREX_INSTANTIATE(double)
#undef PAREX_INSTANTIATE

}  // namespace parex
