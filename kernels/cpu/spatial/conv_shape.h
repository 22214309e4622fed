// What conv2d's CPU kernels share: conv2d_kernel.cc (NCHW through im2col +
// GEMM or oneDNN's primitives, conv3d too) and conv2d_nhwc.cc (channels-last
// on the NHWC tensors themselves through oneDNN). Internal to
// kernels/cpu/spatial.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/cpu/spatial/dnnl_conv.h"
#include "kernels/cpu/spatial/im2col.h"
#include "kernels/kernel_context.h"

namespace parex::cpu::conv {

// A convolution's extents from the op's attributes and its NCHW (NCDHW)
// input, filter and output dims.
struct ConvShape {
  int64_t n, c, m, groups;
  int64_t c_per_group, m_per_group;
  bool volumetric;  // conv3d: d is a real dim (else in = out = size = 1)
  WindowDim d, h, w;
  int64_t col_rows;   // c_per_group * kd * kh * kw: the GEMM's inner extent
  int64_t col_cols;   // od * oh * ow
  int64_t in_volume;  // d.in * h.in * w.in
  bool direct;        // 1x1, stride 1, no padding: the image is its im2col
};

ConvShape GetConvShape(const KernelContext& ctx, const Dims& in,
                       const Dims& filter, const Dims& out);

// oneDNN's terms for `s` (fp32 callers); false when oneDNN cannot take it
// (3-D, empty).
bool DnnlParams(const ConvShape& s, DnnlConvParams* p);

// The fused form's activation: 0 none, 1 relu, 2 relu6 capped at
// `threshold`, 3 leaky_relu of slope `threshold` below 0, 4 hard_swish
// (Paddle's defaults: x * min(max(x + 3, 0), 6) / 6).
struct FusedActivation {
  int kind = 0;
  float threshold = 6.0f;  // the activation's parameter
};

StatusOr<FusedActivation> ReadFusedActivation(const KernelContext& ctx);

// The op says its Filter is constant (set by the inference fusions): a
// kernel may keep what it derives from it.
bool ConstantFilter(const KernelContext& ctx);

// data_format says NHWC.
bool IsChannelsLast(const KernelContext& ctx);

// conv2d (depthwise_conv2d) and its gradient on the NHWC tensors
// (conv2d_nhwc.cc; fp32 through oneDNN: an error for a dtype or shape whose
// predicate, registered by RegisterNativeChannelsLastConvs, said no).
Status Conv2dNhwc(KernelContext& ctx, DType dtype);
Status Conv2dGradNhwc(KernelContext& ctx, DType dtype);
void RegisterNativeChannelsLastConvs();

}  // namespace parex::cpu::conv
