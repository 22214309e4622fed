#include "kernels/cuda/cuda_info.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "kernels/cuda/cuda_status.h"
#include "kernels/visible_devices.h"

namespace parex {
namespace {

Status SetDevice(int device) {
  PAREX_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  return Status::Ok();
}

}  // namespace

int CudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    // No driver or no device: clear the runtime's last error so that it does
    // not surface in an unrelated later check.
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

void RegisterCudaDevices() { SetCudaDeviceCounter(&CudaDeviceCount); }

Status CheckCudaPlace(const Place& place) {
  if (!place.is_cuda()) {
    return InvalidArgument(place.ToString() + " is not a CUDA place");
  }
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    return FailedPrecondition(
        place.ToString() + ": no CUDA device visible (cudaGetDeviceCount: " +
        cudaGetErrorName(error) + ", " + cudaGetErrorString(error) + ")");
  }
  if (place.id < 0 || place.id >= count) {
    return FailedPrecondition(place.ToString() + ": no such CUDA device (" +
                              std::to_string(count) + " visible)");
  }
  return Status::Ok();
}

std::string NcclVersionString() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "unknown";
  // NCCL_VERSION: X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9 on.
  int major, minor, patch;
  if (code >= 10000) {
    major = code / 10000;
    minor = code % 10000 / 100;
  } else {
    major = code / 1000;
    minor = code % 1000 / 100;
  }
  patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(patch);
}

CudaDeviceGuard::CudaDeviceGuard(int device) {
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess) {
    (void)cudaGetLastError();
    current = -1;
  }
  if (current == device) return;
  status_ = SetDevice(device);
  if (status_.ok()) previous_ = current;
}

CudaDeviceGuard::~CudaDeviceGuard() {
  if (previous_ >= 0) (void)cudaSetDevice(previous_);
}

}  // namespace parex
