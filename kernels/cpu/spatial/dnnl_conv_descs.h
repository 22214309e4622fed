// oneDNN's terms for parex's convolutions (dnnl_conv.cc makes and runs the
// primitives): the process's engine, the memory descriptors of a
// convolution in parex's layouts and in those oneDNN may pick, the fused
// form's attributes (bias, residual and activation as post-ops), and which
// convolutions run as a matmul. Only with oneDNN (PAREX_WITH_DNNL).
#pragma once

#ifdef PAREX_WITH_DNNL

#include "kernels/cpu/spatial/dnnl_conv.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace parex::cpu::conv_descs {

using memory = dnnl::memory;
using Tag = memory::format_tag;

// The process's CPU engine, and the calling thread's stream on it (also
// cpu::DnnlConstantMatmul's).
dnnl::engine& Engine();
dnnl::stream& ThreadStream();

// An fp32 descriptor of `dims` in `tag`'s layout.
memory::desc Plain(const memory::dims& dims, Tag tag);

// The memory descriptors of one convolution: `plain` in parex's NCHW /
// (G)OIHW, `any` letting oneDNN choose its (blocked) layouts.
struct Descs {
  memory::desc src, weights, dst;
  memory::desc any_src, any_weights, any_dst;
  memory::dims strides, dilations, pad_l, pad_r;
};
// `backward`: for the backward primitives (NHWC stays NHWC on every plane).
Descs MakeDescs(const DnnlConvParams& p, bool backward = false);

// Attributes with a scratchpad the caller passes at each run.
dnnl::primitive_attr UserScratchpad();
// The plain forward (training's; the backward primitives' hint).
dnnl::convolution_forward::primitive_desc ForwardPd(const Descs& d);
// The fused form's attributes: the activation, and the residual as a sum
// into dst or (`binary_residual`, a matmul's) a binary add read from its
// own buffer of that layout.
dnnl::primitive_attr FusedAttr(const DnnlConvParams& p,
                               const memory::desc* binary_residual = nullptr);
// Whether `p` runs as a matmul (a channels-last 1x1 of stride 1).
bool Pointwise(const DnnlConvParams& p);
// The fused form's forward: bias, residual and activation inside.
dnnl::convolution_forward::primitive_desc FusedForwardPd(
    const Descs& d, const DnnlConvParams& p);

}  // namespace parex::cpu::conv_descs

#endif  // PAREX_WITH_DNNL
