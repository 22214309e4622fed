#include "kernels/cuda/cuda_kernels.h"

#include "kernels/cuda/cuda_allocator.h"

namespace parex {

void RegisterCudaKernels(KernelRegistry* registry) {
  RegisterCudaAllocator();
  RegisterCudaActivationKernels(registry);
  RegisterCudaElementwiseKernels(registry);
  RegisterCudaFillKernels(registry);
  RegisterCudaGradKernels(registry);
  RegisterCudaOptimizerKernels(registry);
  RegisterCudaSoftmaxKernels(registry);
  RegisterCudaMatmulKernels(registry);
  RegisterCudaReduceKernels(registry);
}

}  // namespace parex
