// A product by a constant matrix (an inference program's fc weights) through
// oneDNN's matmul primitive, the matrix reordered once into the layout the
// primitive picks and kept: at batch 1 the weights stream from memory on
// every run, and the packed layout streams them faster than dnnl_sgemm
// reads the plain one (MobileNet's 1024x1000 fc on one thread, weights
// from memory: 86 against 121 us; at batch 32 the two are even). The
// matmul kernels call it for fp32 products whose op says its Y is constant
// (constant_y, set by the inference fusions); elsewhere cpu::Gemm serves.
#pragma once

#include <cstdint>

#include "kernels/kernel_context.h"

namespace parex::cpu {

class DnnlConstantMatmul : public KernelState {
 public:
  DnnlConstantMatmul();
  ~DnnlConstantMatmul() override;
  DnnlConstantMatmul(const DnnlConstantMatmul&) = delete;
  DnnlConstantMatmul& operator=(const DnnlConstantMatmul&) = delete;

  // out[m, n] = act(x[m, k] * op(y) + bias) with op(y) = y [k, n], or y^T
  // of y [n, k] when `trans_y`, bias [n] added when not null, act relu when
  // `relu` (an fc's epilogue, inside the product); `y` holds the same values
  // on every call with the same pointer. False where oneDNN cannot run it
  // (parex built without it, or only its reference code would): the caller
  // computes it.
  bool Run(int64_t m, int64_t k, int64_t n, bool trans_y, const float* x,
           const float* y, float* out, const float* bias = nullptr,
           bool relu = false);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace parex::cpu
