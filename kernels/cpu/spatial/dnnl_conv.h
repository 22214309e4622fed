// fp32 NCHW convolution through oneDNN's primitives (issue 13): forward,
// backward data and backward weights, each created once per shape and kept
// in the op's KernelState (a PreparedOp keeps its KernelContext, so a steady
// step reuses them). conv2d_kernel.cc calls it for fp32 when parex was built
// with oneDNN and falls back to its im2col + GEMM path (which also serves
// fp64 and is the reference in tests) when oneDNN declines a configuration.
//
// oneDNN runs single-threaded inside a kernel (the executor's places are the
// parallelism), with a user-owned scratchpad, so its results are the same
// run to run on one machine.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/kernel_context.h"

namespace parex {
namespace cpu {

// A 2-D convolution in the terms oneDNN wants. Dilations as Paddle's
// (1: dense); paddings may differ before and after.
struct DnnlConvParams {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input NCHW
  int64_t m = 0;                       // output channels
  int64_t groups = 1;
  int64_t kh = 0, kw = 0;  // filter extent
  int64_t oh = 0, ow = 0;  // output extent
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  // Forward only, the fused form's epilogue inside the primitive: a bias per
  // output channel, then an activation (conv::FusedActivation's kinds: 0
  // none, 1 relu, 2 relu6 clipping at `threshold`, 3 leaky_relu of slope
  // `threshold`, 4 hard_swish).
  bool bias = false;
  int activation = 0;
  float threshold = 0.0f;
  // Forward only: a residual added to the convolution and bias before the
  // activation (ResidualData; oneDNN sums it into dst).
  bool residual = false;
  // src and dst (and their gradients) channels-last (NHWC; extents as
  // above), read and written in place by the primitive, never reordered.
  bool nhwc = false;

  bool operator==(const DnnlConvParams& o) const;
  bool operator!=(const DnnlConvParams& o) const { return !(*this == o); }
};

// Whether this build has oneDNN (PAREX_WITH_DNNL).
bool DnnlAvailable();
// When fp32 conv2d uses oneDNN. Measured here (bench/README.md, "Kernels"):
// oneDNN 2.6's fast convolutions work on 16-channel blocks, and reordering
// parex's NCHW tensors into them and back costs more than they save unless
// both channel counts (per group) fill whole blocks; a 1x1 of stride 1 on a
// plane of more than 16 pixels is one GEMM per image as the tensors lie,
// faster still. Elsewhere (LeNet's 1->20 and 20->50) im2col + GEMM is
// faster, except a stem on an image's few channels (at most 4, outputs in
// whole blocks, a filter larger than 1x1) and depthwise convolutions (one
// input and output channel per group), where im2col makes one tiny GEMM per
// channel and oneDNN wins 2-3x (issue 34). kWhereFaster applies that rule
// (DnnlConvChosen in dnnl_conv.cc has the figures); tests force either path.
// Channels-last convolutions (NHWC) go to oneDNN whatever their shape,
// unless kNever: they need no reorder there (NativeChannelsLastConv).
// Process-wide; PAREX_DNNL_CONV=0 / 1 in the environment starts a process
// with kNever / kAlways.
enum class DnnlConvMode { kNever, kWhereFaster, kAlways };
DnnlConvMode GetDnnlConvMode();
void SetDnnlConvMode(DnnlConvMode mode);
// Whether a convolution of `p` goes to oneDNN under the current mode (false
// where parex was built without it).
bool DnnlConvChosen(const DnnlConvParams& p);
// How many oneDNN convolution primitives this process has executed (tests
// tell which path ran).
int64_t DnnlConvExecutions();

// The oneDNN primitives of one conv2d / conv2d_grad op, rebuilt when the
// shape changes. Each call returns false when oneDNN has no implementation
// for the configuration (the caller then uses im2col); errors are reserved
// for failures after the output was touched.
class DnnlConv : public KernelState {
 public:
  DnnlConv();
  ~DnnlConv() override;
  DnnlConv(const DnnlConv&) = delete;
  DnnlConv& operator=(const DnnlConv&) = delete;

  // dst = act(conv(src, weights) + bias [+ residual]) (p.bias,
  // p.activation, p.residual; `bias`, `residual` null without; `residual`
  // may be `dst`).
  // `constant_weights`: `weights` hold the same values on every call with the
  // same pointer (a filter no op writes), so their reorder into the primitive's
  // layout is kept rather than redone.
  bool Forward(const DnnlConvParams& p, const float* src, const float* weights,
               float* dst, const float* bias = nullptr,
               bool constant_weights = false, const float* residual = nullptr);
  // Whether Forward(p, ...) runs here, the primitive made (p.nhwc: false
  // where oneDNN would serve it only with its reference code).
  bool ForwardSupported(const DnnlConvParams& p);
  // Whether BackwardData (`data`) and BackwardWeights (`weights`) of p run
  // here, their primitives made (p.nhwc: false where oneDNN would serve it
  // only with its reference code).
  bool BackwardSupported(const DnnlConvParams& p, bool data, bool weights);
  // dsrc = conv_backward_data(weights, ddst) (overwrites dsrc).
  bool BackwardData(const DnnlConvParams& p, const float* weights,
                    const float* ddst, float* dsrc);
  // dweights = conv_backward_weights(src, ddst) (overwrites dweights).
  bool BackwardWeights(const DnnlConvParams& p, const float* src,
                       const float* ddst, float* dweights);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace cpu
}  // namespace parex
