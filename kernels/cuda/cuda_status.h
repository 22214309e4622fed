// Conversion of CUDA runtime, cuBLAS, cuDNN and NCCL error codes into
// parex::Status: one macro per foreign error domain. Each keeps the failing
// expression's text and the library's own error string, e.g.
//   Internal: CUDA error cudaErrorInvalidValue (invalid argument) in
//   'cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_)'
//   at cuda_device_context.cc:80
// Usable in any function returning Status or StatusOr<T>.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

#include "base/status.h"

namespace parex {

// The Status for a failed call; `expr` is the call's source text and `file`
// and `line` where it was made. cudaErrorNoDevice and
// cudaErrorInsufficientDriver give FailedPrecondition, everything else
// Internal. REQUIRES: the code is not the library's success code.
Status CudaErrorStatus(cudaError_t error, const char* expr, const char* file,
                       int line);
Status CublasErrorStatus(cublasStatus_t status, const char* expr,
                         const char* file, int line);
// cuDNN's "not supported" family gives Unimplemented, everything else
// Internal.
Status CudnnErrorStatus(cudnnStatus_t status, const char* expr,
                        const char* file, int line);
Status NcclErrorStatus(ncclResult_t result, const char* expr, const char* file,
                       int line);

}  // namespace parex

#define PAREX_CUDA_RETURN_IF_ERROR(expr)                                  \
  do {                                                                    \
    const cudaError_t parex_cuda_error_ = (expr);                         \
    if (parex_cuda_error_ != cudaSuccess) {                               \
      return ::parex::CudaErrorStatus(parex_cuda_error_, #expr, __FILE__, \
                                      __LINE__);                          \
    }                                                                     \
  } while (0)

#define PAREX_CUBLAS_RETURN_IF_ERROR(expr)                                     \
  do {                                                                         \
    const cublasStatus_t parex_cublas_status_ = (expr);                        \
    if (parex_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                       \
      return ::parex::CublasErrorStatus(parex_cublas_status_, #expr, __FILE__, \
                                        __LINE__);                             \
    }                                                                          \
  } while (0)

#define PAREX_CUDNN_RETURN_IF_ERROR(expr)                                    \
  do {                                                                       \
    const cudnnStatus_t parex_cudnn_status_ = (expr);                        \
    if (parex_cudnn_status_ != CUDNN_STATUS_SUCCESS) {                       \
      return ::parex::CudnnErrorStatus(parex_cudnn_status_, #expr, __FILE__, \
                                       __LINE__);                            \
    }                                                                        \
  } while (0)

#define PAREX_NCCL_RETURN_IF_ERROR(expr)                                   \
  do {                                                                     \
    const ncclResult_t parex_nccl_result_ = (expr);                        \
    if (parex_nccl_result_ != ncclSuccess) {                               \
      return ::parex::NcclErrorStatus(parex_nccl_result_, #expr, __FILE__, \
                                      __LINE__);                           \
    }                                                                      \
  } while (0)
