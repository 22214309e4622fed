#include "kernels/cpu/cpu_kernels.h"

#include "kernels/cpu/blas.h"

namespace parex {

void RegisterCpuKernels(KernelRegistry* r) {
  cpu::SingleThreadedOpenBlas();
  RegisterIoKernels(r);
  RegisterFillKernels(r);
  RegisterElementwiseKernels(r);
  RegisterActivationKernels(r);
  RegisterUnaryMathKernels(r);
  RegisterLayoutKernels(r);
  RegisterNormKernels(r);
  RegisterSelectionKernels(r);
  RegisterSoftmaxKernels(r);
  RegisterReduceKernels(r);
  RegisterMetricKernels(r);
  RegisterOptimizerKernels(r);
  RegisterMatmulKernels(r);
  RegisterConv2dKernels(r);
  RegisterConvTransposeKernels(r);
  RegisterPool2dKernels(r);
  RegisterPool3dKernels(r);
  RegisterPad3dKernels(r);
  RegisterInterpKernels(r);
  RegisterBatchNormKernels(r);
  RegisterLayerNormKernels(r);
  RegisterGroupNormKernels(r);
  RegisterArrayKernels(r);
  RegisterDropoutKernels(r);
  RegisterShapeKernels(r);
  RegisterLookupTableKernels(r);
  RegisterMathKernels(r);
  RegisterTensorKernels(r);
}

}  // namespace parex
