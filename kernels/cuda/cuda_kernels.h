// The CUDA kernels of parex. The CPU registry does not know about them: a
// program that runs on CUDA places calls RegisterCudaKernels once (on
// KernelRegistry::Global() or its own registry) before running.
//
// Kernels exist for fp32 and fp64 with Fluid's attribute names and meaning:
//   elementwise_add/sub/mul/div  (numpy broadcasting at axis -1, Fluid's at
//                                 an explicit axis)
//   relu, sigmoid, tanh, scale
//   reduce_sum, reduce_mean, mean, sum
//   mul, matmul, matmul_v2       (cuBLAS)
//   softmax, softmax_with_cross_entropy and their gradients
//   relu_grad, sigmoid_grad, tanh_grad, mean_grad, mul_grad
//   elementwise_{add,sub,mul,div,max,min}_grad
//   top_k, accuracy
//   dropout, dropout_grad        (the CPU kernel's mask, drawn on the host)
//   sgd, momentum, adam          (dense gradients)
//   conv2d, depthwise_conv2d and their gradients (cuDNN; NCHW)
//   pool2d, pool2d_grad          (max / avg, every window rule; NCHW)
//   batch_norm, batch_norm_grad  (NCHW and NHWC)
//   reshape2, transpose2 and their gradients
//   matmul_v2_grad, reduce_sum_grad, reduce_mean_grad
//   gelu, layer_norm, lookup_table_v2 and their gradients (dense W@GRAD)
// Each runs on the stream of the op's CudaDeviceContext and returns once its
// work is queued; inputs must live on the context's place.
#pragma once

#include "kernels/cuda/cuda_info.h"
#include "kernels/kernel_registry.h"

namespace parex {

// Adds every CUDA kernel to `registry` (Place::Kind::kCUDA) and installs the
// CUDA allocator and device-context factories and the visible-device count
// (kernels/visible_devices.h). Needs no device; safe to call more than once.
void RegisterCudaKernels(KernelRegistry* registry);

// The groups, one file each, named like the schema groups of graph/ir/ops/.
void RegisterCudaActivationKernels(KernelRegistry* registry);
void RegisterCudaElementwiseKernels(KernelRegistry* registry);
void RegisterCudaDropoutKernels(KernelRegistry* registry);
void RegisterCudaElementwiseGradKernels(KernelRegistry* registry);
void RegisterCudaFillKernels(KernelRegistry* registry);
void RegisterCudaMetricKernels(KernelRegistry* registry);
void RegisterCudaGradKernels(KernelRegistry* registry);
void RegisterCudaOptimizerKernels(KernelRegistry* registry);
void RegisterCudaSoftmaxKernels(KernelRegistry* registry);
void RegisterCudaMatmulKernels(KernelRegistry* registry);
void RegisterCudaReduceKernels(KernelRegistry* registry);
void RegisterCudaConvKernels(KernelRegistry* registry);
void RegisterCudaPoolKernels(KernelRegistry* registry);
void RegisterCudaBatchNormKernels(KernelRegistry* registry);
void RegisterCudaShapeKernels(KernelRegistry* registry);
void RegisterCudaTransformerKernels(KernelRegistry* registry);

}  // namespace parex
