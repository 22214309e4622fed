#include "kernels/cuda/cuda_status.h"

#include <cstring>
#include <string>

namespace parex {
namespace {

// "cuda_device_context.cc:80": the directory adds nothing to a message.
std::string Where(const char* file, int line) {
  const char* slash = std::strrchr(file, '/');
  return std::string(slash ? slash + 1 : file) + ":" + std::to_string(line);
}

}  // namespace

Status CudaErrorStatus(cudaError_t error, const char* expr, const char* file,
                       int line) {
  std::string message = std::string("CUDA error ") + cudaGetErrorName(error) +
                        " (" + cudaGetErrorString(error) + ") in '" + expr +
                        "' at " + Where(file, line);
  if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver) {
    return FailedPrecondition(std::move(message));
  }
  return Internal(std::move(message));
}

Status CublasErrorStatus(cublasStatus_t status, const char* expr,
                         const char* file, int line) {
  return Internal(std::string("cuBLAS error ") + cublasGetStatusName(status) +
                  " (" + cublasGetStatusString(status) + ") in '" + expr +
                  "' at " + Where(file, line));
}

Status CudnnErrorStatus(cudnnStatus_t status, const char* expr,
                        const char* file, int line) {
  std::string message = std::string("cuDNN error ") +
                        std::to_string(static_cast<int>(status)) + " (" +
                        cudnnGetErrorString(status) + ") in '" + expr +
                        "' at " + Where(file, line);
  // cuDNN 9 keeps a more precise description of the last failure.
  char last[256] = {};
  cudnnGetLastErrorString(last, sizeof(last));
  if (last[0] != '\0') message += ": " + std::string(last);
  if (CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED) {
    return Unimplemented(std::move(message));
  }
  return Internal(std::move(message));
}

Status NcclErrorStatus(ncclResult_t result, const char* expr, const char* file,
                       int line) {
  std::string message = std::string("NCCL error ") +
                        std::to_string(static_cast<int>(result)) + " (" +
                        ncclGetErrorString(result) + ") in '" + expr + "' at " +
                        Where(file, line);
  // NCCL keeps a more precise description of the last failure per thread.
  const char* last = ncclGetLastError(nullptr);
  if (last != nullptr && last[0] != '\0') message += ": " + std::string(last);
  return Internal(std::move(message));
}

}  // namespace parex
