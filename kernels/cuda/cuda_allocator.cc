#include "kernels/cuda/cuda_allocator.h"

#include <cuda_runtime_api.h>

#include <mutex>
#include <string>

#include "base/logging.h"
#include "kernels/allocator.h"
#include "kernels/cuda/cuda_info.h"

namespace parex {
namespace {

std::unique_ptr<Allocator> MakeCudaAllocator(const Place& place) {
  const int device = place.id;
  return MakeCachingAllocator(
      place,
      [device](size_t size) -> void* {
        CudaDeviceGuard guard(device);
        if (!guard.status().ok()) {
          LogError(Subsystem::kKernel, guard.status().ToString());
          return nullptr;
        }
        void* ptr = nullptr;
        cudaError_t error = cudaMalloc(&ptr, size);
        if (error != cudaSuccess) {
          // The caching allocator aborts on nullptr; say why first.
          (void)cudaGetLastError();
          LogError(Subsystem::kKernel,
                   "cudaMalloc of " + std::to_string(size) + " bytes on " +
                       Place::CUDA(device).ToString() +
                       " failed: " + cudaGetErrorString(error));
          return nullptr;
        }
        return ptr;
      },
      [device](void* ptr) {
        CudaDeviceGuard guard(device);
        (void)cudaFree(ptr);
      });
}

}  // namespace

void RegisterCudaAllocator() {
  static std::once_flag once;
  std::call_once(once, [] {
    RegisterAllocatorFactory(Place::Kind::kCUDA, &MakeCudaAllocator);
  });
}

}  // namespace parex
