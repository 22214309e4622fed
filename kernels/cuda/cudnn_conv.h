// CudnnConv: the cuDNN side of conv2d / depthwise_conv2d and their gradient
// on CUDA (kernels/cuda/conv_kernels.cc reads the op and calls it): cuDNN's
// descriptors and algorithms for each geometry the op has met, chosen once
// per geometry, and a workspace from parex's CUDA allocator that only grows.
//
// Exactness over speed where they conflict: fp32 runs with CUDNN_FMA_MATH
// (no TF32 tensor cores), FFT and Winograd algorithms are never chosen
// (their rounding differs visibly from a direct sum), and deterministic
// algorithms are preferred; within that, cuDNN's heuristic order decides.
//
// Thread-safety: one op runs its kernel at a time (KernelState). The
// buffers are used by work queued on the context's stream and stay alive
// with the state; a buffer replaced by a larger one goes back to the
// stream-ordered caching allocator (cuda_allocator.h).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/cuda/cuda_device_context.h"
#include "kernels/kernel_context.h"
#include "kernels/tensor.h"

namespace parex {

// A convolution as cuDNN sees it: NCHW input [n, c, h, w], filter
// [m, c / groups, kh, kw], output [n, m, oh, ow], cross-correlation with
// symmetric paddings (asymmetric ones are made explicit by the caller).
struct CudnnConvShape {
  bool is_double = false;
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t m = 0, kh = 0, kw = 0, groups = 1;
  int64_t oh = 0, ow = 0;
  int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;

  std::vector<int64_t> Key() const;
  std::string ToString() const;  // for errors
};

class CudnnConv : public KernelState {
 public:
  CudnnConv();
  ~CudnnConv() override;

  // y = conv(x, w). REQUIRES: every extent of `shape` is positive.
  Status Forward(CudaDeviceContext* cuda, const CudnnConvShape& shape,
                 const void* x, const void* w, void* y);
  // dx = the input gradient for dy.
  Status BackwardData(CudaDeviceContext* cuda, const CudnnConvShape& shape,
                      const void* w, const void* dy, void* dx);
  // dw = the filter gradient (overwritten, not accumulated).
  Status BackwardFilter(CudaDeviceContext* cuda, const CudnnConvShape& shape,
                        const void* x, const void* dy, void* dw);

  // A device buffer of at least `bytes` on `place`, kept for later runs
  // (the explicitly padded input or input gradient).
  StatusOr<void*> PaddedBuffer(const Place& place, size_t bytes);
  // Likewise, the columns of the gradients as GEMMs (conv_gemm_grad.h).
  StatusOr<void*> GemmScratch(const Place& place, size_t bytes);

 private:
  struct Plan;
  StatusOr<Plan*> PlanFor(const CudnnConvShape& shape);
  StatusOr<void*> Workspace(const Place& place, size_t bytes);

  std::map<std::vector<int64_t>, std::unique_ptr<Plan>> plans_;
  Tensor workspace_;
  Tensor padded_;
  Tensor gemm_scratch_;
};

}  // namespace parex
