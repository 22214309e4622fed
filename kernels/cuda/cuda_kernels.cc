#include "kernels/cuda/cuda_kernels.h"

#include "kernels/cuda/cuda_allocator.h"
#include "kernels/cuda/cuda_device_context.h"

namespace parex {

void RegisterCudaKernels(KernelRegistry* registry) {
  RegisterCudaAllocator();
  RegisterCudaDeviceContextFactory();
  RegisterCudaDevices();
  RegisterCudaActivationKernels(registry);
  RegisterCudaElementwiseKernels(registry);
  RegisterCudaDropoutKernels(registry);
  RegisterCudaElementwiseGradKernels(registry);
  RegisterCudaFillKernels(registry);
  RegisterCudaMetricKernels(registry);
  RegisterCudaGradKernels(registry);
  RegisterCudaOptimizerKernels(registry);
  RegisterCudaSoftmaxKernels(registry);
  RegisterCudaMatmulKernels(registry);
  RegisterCudaReduceKernels(registry);
  RegisterCudaConvKernels(registry);
  RegisterCudaPoolKernels(registry);
  RegisterCudaBatchNormKernels(registry);
  RegisterCudaShapeKernels(registry);
  RegisterCudaTransformerKernels(registry);
}

}  // namespace parex
