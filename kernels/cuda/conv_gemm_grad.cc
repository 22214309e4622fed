#include "kernels/cuda/conv_gemm_grad.h"

#include <algorithm>

#include "kernels/cuda/cuda_blas.h"
#include "kernels/cuda/cuda_status.h"

namespace parex {

int64_t ConvGemmChunk(const Im2ColShape& s, int64_t n, int64_t m) {
  const int64_t per_sample = std::max<int64_t>(1, (s.Rows() + m) * s.Plane());
  return std::clamp<int64_t>(kConvGemmChunkElements / per_sample, 1,
                             std::max<int64_t>(n, 1));
}

int64_t ConvGemmScratchElements(const Im2ColShape& s, int64_t n, int64_t m) {
  return (s.Rows() + m) * ConvGemmChunk(s, n, m) * s.Plane();
}

template <typename T>
Status GemmConvGrad(const CudaDeviceContext& cuda, const Im2ColShape& s,
                    int64_t n, int64_t m, const T* x, const T* w, const T* dout,
                    T* dx, T* dw, T* scratch) {
  const cudaStream_t stream = cuda.stream();
  const int64_t q = s.Rows(), p = s.Plane();
  const int64_t chunk = ConvGemmChunk(s, n, m);
  T* col = scratch;                 // [Q, nb * P]
  T* dy = scratch + q * chunk * p;  // [M, nb * P]
  for (int64_t n0 = 0; n0 < n; n0 += chunk) {
    const int64_t nb = std::min(chunk, n - n0);
    const int64_t r = nb * p;
    PAREX_CUDA_RETURN_IF_ERROR(
        LaunchChannelMajor<T>(dout, n0, nb, m, p, dy, stream));
    if (dw != nullptr) {
      PAREX_CUDA_RETURN_IF_ERROR(LaunchIm2Col<T>(x, s, n0, nb, col, stream));
      // dW [M, Q] (+)= dY [M, R] * col [Q, R]^T
      PAREX_RETURN_IF_ERROR(CudaGemm<T>(cuda, false, true, m, q, r, T(1), dy, r,
                                        0, col, r, 0, T(n0 == 0 ? 0 : 1), dw, q,
                                        0, 1));
    }
    if (dx != nullptr) {
      // col [Q, R] = W^T [Q, M] * dY [M, R], then folded back into dx.
      PAREX_RETURN_IF_ERROR(CudaGemm<T>(cuda, true, false, q, r, m, T(1), w, q,
                                        0, dy, r, 0, T(0), col, r, 0, 1));
      PAREX_CUDA_RETURN_IF_ERROR(LaunchCol2Im<T>(col, s, n0, nb, dx, stream));
    }
  }
  return Status::Ok();
}

template Status GemmConvGrad<float>(const CudaDeviceContext&,
                                    const Im2ColShape&, int64_t, int64_t,
                                    const float*, const float*, const float*,
                                    float*, float*, float*);
template Status GemmConvGrad<double>(const CudaDeviceContext&,
                                     const Im2ColShape&, int64_t, int64_t,
                                     const double*, const double*,
                                     const double*, double*, double*, double*);

}  // namespace parex
