// Element-wise device kernels: binary ops broadcasting either operand, unary
// activations, scale and the n-ary sum. Grid-stride loops with 64-bit
// indices, so any element count runs with a bounded grid.
#include <algorithm>
#include <cstdint>

#include "kernels/cuda/cuda_launchers.h"

namespace parex {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

int BlocksFor(int64_t n) {
  return static_cast<int>(
      std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
}

__device__ __forceinline__ int64_t FirstIndex() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t GridStride() {
  return static_cast<int64_t>(blockDim.x) * gridDim.x;
}

struct AddFn {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct SubFn {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a - b;
  }
};
struct MulFn {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a * b;
  }
};
struct DivFn {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a / b;
  }
};

__device__ __forceinline__ float Exp(float v) { return expf(v); }
__device__ __forceinline__ double Exp(double v) { return exp(v); }
__device__ __forceinline__ float Tanh(float v) { return tanhf(v); }
__device__ __forceinline__ double Tanh(double v) { return tanh(v); }

struct ReluFn {
  template <typename T>
  __device__ T operator()(T v) const {
    return v > T(0) ? v : T(0);
  }
};
struct SigmoidFn {
  template <typename T>
  __device__ T operator()(T v) const {
    return T(1) / (T(1) + Exp(-v));
  }
};
struct TanhFn {
  template <typename T>
  __device__ T operator()(T v) const {
    return Tanh(v);
  }
};

template <typename T, typename Fn>
__global__ void BinarySameKernel(const T* x, const T* y, T* out, int64_t n) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    out[i] = Fn()(x[i], y[i]);
  }
}

template <typename T, typename Fn, bool kBroadcastY>
__global__ void BinaryMidKernel(const T* x, const T* y, T* out, int64_t total,
                                int64_t n, int64_t post) {
  for (int64_t i = FirstIndex(); i < total; i += GridStride()) {
    const int64_t mid = (i / post) % n;
    out[i] = kBroadcastY ? Fn()(x[i], y[mid]) : Fn()(x[mid], y[i]);
  }
}

template <typename T, typename Fn>
__global__ void BinaryGeneralKernel(BroadcastShape shape, const T* x,
                                    const T* y, T* out, int64_t total) {
  for (int64_t i = FirstIndex(); i < total; i += GridStride()) {
    int64_t rest = i, x_offset = 0, y_offset = 0;
    for (int d = shape.rank - 1; d >= 0; --d) {
      const int64_t index = rest % shape.extents[d];
      rest /= shape.extents[d];
      x_offset += index * shape.x_strides[d];
      y_offset += index * shape.y_strides[d];
    }
    out[i] = Fn()(x[x_offset], y[y_offset]);
  }
}

template <typename T, typename Fn>
__global__ void UnaryKernel(const T* x, T* out, int64_t n) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) out[i] = Fn()(x[i]);
}

template <typename T>
__global__ void ScaleKernel(const T* x, T* out, int64_t n, T scale, T bias,
                            bool bias_after_scale, const float* scale_tensor) {
  const T s = scale_tensor != nullptr ? static_cast<T>(*scale_tensor) : scale;
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    out[i] = bias_after_scale ? s * x[i] + bias : s * (x[i] + bias);
  }
}

template <typename T>
struct SumArgs {
  const T* inputs[kMaxSumInputs];
  int count;
};

// kCount > 0: that many inputs, the loop over them unrolled so that the
// pointers stay in the parameter space (a loop indexing the parameter array
// copied it to local memory and ran at a sixth of the memory bandwidth);
// kCount == 0: args.count inputs. Elements are taken kVec at a time where
// every pointer is aligned to kVec elements; the additions are the same
// (out, then x_0, x_1, ... in order) either way.
template <typename T, int kCount>
__global__ void SumKernel(SumArgs<T> args, bool accumulate, T* out, int64_t n,
                          bool vectorized) {
  constexpr int kVec = 16 / sizeof(T);
  const int count = kCount > 0 ? kCount : args.count;
  auto one = [&](int64_t i) {
    T acc = accumulate ? out[i] : T(0);
    if constexpr (kCount > 0) {
#pragma unroll
      for (int k = 0; k < kCount; ++k) acc += args.inputs[k][i];
    } else {
      for (int k = 0; k < count; ++k) acc += args.inputs[k][i];
    }
    out[i] = acc;
  };
  int64_t first_scalar = 0;
  if (kCount > 0 && vectorized) {
    struct alignas(16) Vec {
      T v[kVec];
    };
    const int64_t groups = n / kVec;
    for (int64_t g = FirstIndex(); g < groups; g += GridStride()) {
      Vec acc;
      if (accumulate) {
        acc = reinterpret_cast<const Vec*>(out)[g];
      } else {
#pragma unroll
        for (int l = 0; l < kVec; ++l) acc.v[l] = T(0);
      }
#pragma unroll
      for (int k = 0; k < (kCount > 0 ? kCount : 1); ++k) {
        const Vec x = reinterpret_cast<const Vec*>(args.inputs[k])[g];
#pragma unroll
        for (int l = 0; l < kVec; ++l) acc.v[l] += x.v[l];
      }
      reinterpret_cast<Vec*>(out)[g] = acc;
    }
    first_scalar = groups * kVec;
  }
  for (int64_t i = first_scalar + FirstIndex(); i < n; i += GridStride()) {
    one(i);
  }
}

template <typename T>
struct SumToAllArgs {
  const T* inputs[kMaxSumInputs];
  T* outputs[kMaxSumInputs];
  int count, out_count;
};

// One pass of an in-device all-reduce: each element's inputs read once, in
// rank order, the sum written to every output. kCount / kOut fixed and the
// loops unrolled (pointers stay in the parameter space), kVec elements at a
// time where every pointer is aligned to them.
template <typename T, int kCount, int kOut>
__global__ void SumToAllKernel(SumToAllArgs<T> args, int64_t n,
                               bool vectorized) {
  constexpr int kVec = 16 / sizeof(T);
  struct alignas(16) Vec {
    T v[kVec];
  };
  int64_t first_scalar = 0;
  if (vectorized) {
    const int64_t groups = n / kVec;
    for (int64_t g = FirstIndex(); g < groups; g += GridStride()) {
      Vec acc = reinterpret_cast<const Vec*>(args.inputs[0])[g];
#pragma unroll
      for (int k = 1; k < kCount; ++k) {
        const Vec x = reinterpret_cast<const Vec*>(args.inputs[k])[g];
#pragma unroll
        for (int l = 0; l < kVec; ++l) acc.v[l] += x.v[l];
      }
#pragma unroll
      for (int k = 0; k < kOut; ++k)
        reinterpret_cast<Vec*>(args.outputs[k])[g] = acc;
    }
    first_scalar = groups * kVec;
  }
  for (int64_t i = first_scalar + FirstIndex(); i < n; i += GridStride()) {
    T acc = args.inputs[0][i];
#pragma unroll
    for (int k = 1; k < kCount; ++k) acc += args.inputs[k][i];
#pragma unroll
    for (int k = 0; k < kOut; ++k) args.outputs[k][i] = acc;
  }
}

// Any counts: the loops index the parameter arrays.
template <typename T>
__global__ void SumToAllAnyKernel(SumToAllArgs<T> args, int64_t n) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    T acc = args.inputs[0][i];
    for (int k = 1; k < args.count; ++k) acc += args.inputs[k][i];
    for (int k = 0; k < args.out_count; ++k) args.outputs[k][i] = acc;
  }
}

// Calls launch(Fn{}) with the functor of `op`.
template <typename Launch>
void WithBinaryFn(BinaryOp op, Launch launch) {
  switch (op) {
    case BinaryOp::kAdd:
      launch(AddFn{});
      break;
    case BinaryOp::kSub:
      launch(SubFn{});
      break;
    case BinaryOp::kMul:
      launch(MulFn{});
      break;
    case BinaryOp::kDiv:
      launch(DivFn{});
      break;
  }
}

template <typename Launch>
void WithUnaryFn(UnaryOp op, Launch launch) {
  switch (op) {
    case UnaryOp::kRelu:
      launch(ReluFn{});
      break;
    case UnaryOp::kSigmoid:
      launch(SigmoidFn{});
      break;
    case UnaryOp::kTanh:
      launch(TanhFn{});
      break;
  }
}

}  // namespace

template <typename T>
cudaError_t LaunchBinarySame(BinaryOp op, const T* x, const T* y, T* out,
                             int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  WithBinaryFn(op, [&](auto fn) {
    BinarySameKernel<T, decltype(fn)>
        <<<BlocksFor(n), kThreads, 0, stream>>>(x, y, out, n);
  });
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchBinaryMid(BinaryOp op, bool broadcast_y, const T* x,
                            const T* y, T* out, int64_t pre, int64_t n,
                            int64_t post, cudaStream_t stream) {
  const int64_t total = pre * n * post;
  if (total <= 0) return cudaSuccess;
  WithBinaryFn(op, [&](auto fn) {
    if (broadcast_y) {
      BinaryMidKernel<T, decltype(fn), true>
          <<<BlocksFor(total), kThreads, 0, stream>>>(x, y, out, total, n,
                                                      post);
    } else {
      BinaryMidKernel<T, decltype(fn), false>
          <<<BlocksFor(total), kThreads, 0, stream>>>(x, y, out, total, n,
                                                      post);
    }
  });
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchBinaryGeneral(BinaryOp op, const BroadcastShape& shape,
                                const T* x, const T* y, T* out,
                                cudaStream_t stream) {
  int64_t total = 1;
  for (int d = 0; d < shape.rank; ++d) total *= shape.extents[d];
  if (total <= 0) return cudaSuccess;
  WithBinaryFn(op, [&](auto fn) {
    BinaryGeneralKernel<T, decltype(fn)>
        <<<BlocksFor(total), kThreads, 0, stream>>>(shape, x, y, out, total);
  });
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchUnary(UnaryOp op, const T* x, T* out, int64_t n,
                        cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  WithUnaryFn(op, [&](auto fn) {
    UnaryKernel<T, decltype(fn)>
        <<<BlocksFor(n), kThreads, 0, stream>>>(x, out, n);
  });
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchScale(const T* x, T* out, int64_t n, T scale, T bias,
                        bool bias_after_scale, const float* scale_tensor,
                        cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  ScaleKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
      x, out, n, scale, bias, bias_after_scale, scale_tensor);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchSum(const T* const* inputs, int count, bool accumulate,
                      T* out, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (count < 0 || count > kMaxSumInputs) return cudaErrorInvalidValue;
  SumArgs<T> args{};
  bool aligned = reinterpret_cast<uintptr_t>(out) % 16 == 0;
  for (int k = 0; k < count; ++k) {
    args.inputs[k] = inputs[k];
    aligned &= reinterpret_cast<uintptr_t>(inputs[k]) % 16 == 0;
  }
  args.count = count;
  const int64_t per_thread = aligned ? 16 / sizeof(T) : 1;
  const int blocks = BlocksFor((n + per_thread - 1) / per_thread);
  switch (count) {
    case 1:
      SumKernel<T, 1>
          <<<blocks, kThreads, 0, stream>>>(args, accumulate, out, n, aligned);
      break;
    case 2:
      SumKernel<T, 2>
          <<<blocks, kThreads, 0, stream>>>(args, accumulate, out, n, aligned);
      break;
    case 3:
      SumKernel<T, 3>
          <<<blocks, kThreads, 0, stream>>>(args, accumulate, out, n, aligned);
      break;
    case 4:
      SumKernel<T, 4>
          <<<blocks, kThreads, 0, stream>>>(args, accumulate, out, n, aligned);
      break;
    default:
      SumKernel<T, 0><<<BlocksFor(n), kThreads, 0, stream>>>(args, accumulate,
                                                             out, n, false);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchSumToAll(const T* const* inputs, int count, T* const* outputs,
                           int out_count, int64_t n, cudaStream_t stream) {
  if (n <= 0 || out_count == 0) return cudaSuccess;
  if (count < 1 || count > kMaxSumInputs || out_count < 0 ||
      out_count > kMaxSumInputs) {
    return cudaErrorInvalidValue;
  }
  SumToAllArgs<T> args{};
  bool aligned = true;
  for (int k = 0; k < count; ++k) {
    args.inputs[k] = inputs[k];
    aligned &= reinterpret_cast<uintptr_t>(inputs[k]) % 16 == 0;
  }
  for (int k = 0; k < out_count; ++k) {
    args.outputs[k] = outputs[k];
    aligned &= reinterpret_cast<uintptr_t>(outputs[k]) % 16 == 0;
  }
  args.count = count;
  args.out_count = out_count;
  const int blocks =
      BlocksFor(aligned ? (n + 16 / sizeof(T) - 1) / (16 / sizeof(T)) : n);
  if (count == 2 && out_count == 2) {
    SumToAllKernel<T, 2, 2><<<blocks, kThreads, 0, stream>>>(args, n, aligned);
  } else if (count == 3 && out_count == 3) {
    SumToAllKernel<T, 3, 3><<<blocks, kThreads, 0, stream>>>(args, n, aligned);
  } else if (count == 4 && out_count == 4) {
    SumToAllKernel<T, 4, 4><<<blocks, kThreads, 0, stream>>>(args, n, aligned);
  } else {
    SumToAllAnyKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(args, n);
  }
  return cudaGetLastError();
}

#define PAREX_INSTANTIATE_ELEMENTWISE_LAUNCHERS(T)                             \
  template cudaError_t LaunchBinarySame<T>(BinaryOp, const T*, const T*, T*,   \
                                           int64_t, cudaStream_t);             \
  template cudaError_t LaunchBinaryMid<T>(BinaryOp, bool, const T*, const T*,  \
                                          T*, int64_t, int64_t, int64_t,       \
                                          cudaStream_t);                       \
  template cudaError_t LaunchBinaryGeneral<T>(                                 \
      BinaryOp, const BroadcastShape&, const T*, const T*, T*, cudaStream_t);  \
  template cudaError_t LaunchUnary<T>(UnaryOp, const T*, T*, int64_t,          \
                                      cudaStream_t);                           \
  template cudaError_t LaunchScale<T>(const T*, T*, int64_t, T, T, bool,       \
                                      const float*, cudaStream_t);             \
  template cudaError_t LaunchSum<T>(const T* const*, int, bool, T*, int64_t,   \
                                    cudaStream_t);                             \
  template cudaError_t LaunchSumToAll<T>(const T* const*, int, T* const*, int, \
                                         int64_t, cudaStream_t);

PAREX_INSTANTIATE_ELEMENTWISE_LAUNCHERS(float)
PAREX_INSTANTIATE_ELEMENTWISE_LAUNCHERS(double)

}  // namespace parex
