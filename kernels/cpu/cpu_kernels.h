// The groups of CPU kernels, one file each under kernels/cpu/, matching the
// schema groups of graph/ir/ops/.
#pragma once

#include "kernels/kernel_registry.h"

namespace parex {

void RegisterIoKernels(KernelRegistry* r);
void RegisterFillKernels(KernelRegistry* r);
void RegisterElementwiseKernels(KernelRegistry* r);
void RegisterActivationKernels(KernelRegistry* r);
void RegisterUnaryMathKernels(KernelRegistry* r);
void RegisterLayoutKernels(KernelRegistry* r);
void RegisterNormKernels(KernelRegistry* r);
void RegisterSelectionKernels(KernelRegistry* r);
void RegisterSoftmaxKernels(KernelRegistry* r);
void RegisterReduceKernels(KernelRegistry* r);
void RegisterMetricKernels(KernelRegistry* r);
void RegisterOptimizerKernels(KernelRegistry* r);
void RegisterMatmulKernels(KernelRegistry* r);
void RegisterConv2dKernels(KernelRegistry* r);
void RegisterConvTransposeKernels(KernelRegistry* r);
void RegisterPool2dKernels(KernelRegistry* r);
void RegisterPool3dKernels(KernelRegistry* r);
void RegisterPad3dKernels(KernelRegistry* r);
void RegisterInterpKernels(KernelRegistry* r);
void RegisterBatchNormKernels(KernelRegistry* r);
void RegisterLayerNormKernels(KernelRegistry* r);
void RegisterGroupNormKernels(KernelRegistry* r);
void RegisterArrayKernels(KernelRegistry* r);
void RegisterDropoutKernels(KernelRegistry* r);
void RegisterShapeKernels(KernelRegistry* r);
void RegisterLookupTableKernels(KernelRegistry* r);
void RegisterMathKernels(KernelRegistry* r);
void RegisterTensorKernels(KernelRegistry* r);

}  // namespace parex
