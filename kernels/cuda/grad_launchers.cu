// Device kernels of the activation gradients, mean's gradient and the
// binary element-wise ops' gradient contributions: grid-stride loops.
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

template <typename T>
__device__ T Contribution(BinaryGrad op, bool wrt_y, T x, T y, T out, T dout) {
  switch (op) {
    case BinaryGrad::kAdd:
      return dout;
    case BinaryGrad::kSub:
      return wrt_y ? -dout : dout;
    case BinaryGrad::kMul:
      return wrt_y ? dout * x : dout * y;
    case BinaryGrad::kDiv:
      return wrt_y ? -dout * out / y : dout / y;
    case BinaryGrad::kMax:
      return wrt_y ? (x <= y ? dout : T(0)) : (x > y ? dout : T(0));
    case BinaryGrad::kMin:
      return wrt_y ? (x >= y ? dout : T(0)) : (x < y ? dout : T(0));
  }
  return T(0);
}

template <typename T>
__global__ void BinaryGradContribKernel(BinaryGrad op, bool wrt_y,
                                        GradShape shape, const T* x, const T* y,
                                        const T* out, const T* dout, T* contrib,
                                        int64_t n) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    int64_t rest = i, xo = 0, yo = 0;
    for (int d = shape.rank - 1; d >= 0; --d) {
      const int64_t index = rest % shape.extents[d];
      rest /= shape.extents[d];
      xo += index * shape.x_strides[d];
      yo += index * shape.y_strides[d];
    }
    contrib[i] = Contribution<T>(op, wrt_y, x != nullptr ? x[xo] : T(0), y[yo],
                                 out != nullptr ? out[i] : T(0), dout[i]);
  }
}

template <typename T>
__global__ void DropoutApplyKernel(const T* x, const uint8_t* mask, T keep,
                                   T* out, int64_t n) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    out[i] = mask[i] ? x[i] / keep : T(0);
  }
}

}  // namespace

template <typename T>
cudaError_t LaunchDropoutApply(const T* x, const uint8_t* mask, T keep, T* out,
                               int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  DropoutApplyKernel<T>
      <<<BlocksFor(n), kThreads, 0, stream>>>(x, mask, keep, out, n);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchBinaryGradContrib(BinaryGrad op, bool wrt_y,
                                    const GradShape& shape, const T* x,
                                    const T* y, const T* out, const T* dout,
                                    T* contrib, cudaStream_t stream) {
  int64_t n = 1;
  for (int d = 0; d < shape.rank; ++d) n *= shape.extents[d];
  if (n == 0) return cudaSuccess;
  BinaryGradContribKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
      op, wrt_y, shape, x, y, out, dout, contrib, n);
  return cudaGetLastError();
}

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

#define PAREX_INSTANTIATE(T)                                                   \
  template cudaError_t LaunchActivationGrad<T>(                                \
      ActivationGrad, const T*, const T*, T*, int64_t, cudaStream_t);          \
  template cudaError_t LaunchMeanGrad<T>(const T*, T*, int64_t, cudaStream_t); \
  template cudaError_t LaunchBinaryGradContrib<T>(                             \
      BinaryGrad, bool, const GradShape&, const T*, const T*, const T*,        \
      const T*, T*, cudaStream_t);
template cudaError_t LaunchDropoutApply<float>(const float*, const uint8_t*,
                                               float, float*, int64_t,
                                               cudaStream_t);
template cudaError_t LaunchDropoutApply<double>(const double*, const uint8_t*,
                                                double, double*, int64_t,
                                                cudaStream_t);
PAREX_INSTANTIATE(float)
PAREX_INSTANTIATE(double)
#undef PAREX_INSTANTIATE

}  // namespace parex
