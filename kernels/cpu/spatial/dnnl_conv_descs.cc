#include "kernels/cpu/spatial/dnnl_conv_descs.h"

#ifdef PAREX_WITH_DNNL

namespace parex::cpu::conv_descs {

dnnl::engine& Engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& ThreadStream() {
  thread_local dnnl::stream stream(Engine());
  return stream;
}

memory::desc Plain(const memory::dims& dims, Tag tag) {
  return memory::desc(dims, memory::data_type::f32, tag);
}

Descs MakeDescs(const DnnlConvParams& p, bool backward) {
  Descs d;
  const memory::dims src{p.n, p.c, p.h, p.w}, dst{p.n, p.m, p.oh, p.ow};
  memory::dims weights{p.m, p.c, p.kh, p.kw};
  Tag weights_tag = Tag::oihw;
  if (p.groups != 1) {
    weights = {p.groups, p.m / p.groups, p.c / p.groups, p.kh, p.kw};
    weights_tag = Tag::goihw;
  }
  const Tag act = p.nhwc ? Tag::nhwc : Tag::nchw;
  d.src = Plain(src, act);
  d.dst = Plain(dst, act);
  d.weights = Plain(weights, weights_tag);
  // Channels-last activations stay as they are (oneDNN's kernels read
  // NHWC); channels-first ones go to the layout oneDNN picks.
  // ... except a wide filter on a tiny output plane (ResNet's last stage at
  // 64 px: 3x3 convs of 512 channels on 2x2): oneDNN's NHWC kernels run
  // those at half speed, its 16-channel blocked ones not, and the reorders
  // of such small tensors cost little (ResNet-18 at batch 32 on one core:
  // 53.8 -> 49.4 ms, ResNet-50 111 -> 105; MobileNet's 1x1s on 2x2 gain
  // nothing). Not for a few images: ResNet-18 on one, 2.95 -> 3.51 ms.
  // (16-channel blocks are AVX-512's; elsewhere NHWC stays.) Not for the
  // backward primitives either, faster on NHWC there (512->512 on 2x2 at
  // batch 32, the weights' reorders included: data 4.4 -> 3.0 ms, weights
  // 6.4 -> 5.3).
  static const bool avx512 = [] {
    const int core = static_cast<int>(dnnl::cpu_isa::avx512_core);
    return (static_cast<int>(dnnl::get_effective_cpu_isa()) & core) == core;
  }();
  const bool blocked = avx512 && !backward && p.nhwc && p.groups == 1 &&
                       p.c % 16 == 0 && p.m % 16 == 0 && p.kh * p.kw > 1 &&
                       p.oh * p.ow <= 4 && p.n >= 8;
  d.any_src = blocked  ? Plain(src, Tag::nChw16c)
              : p.nhwc ? d.src
                       : Plain(src, Tag::any);
  d.any_dst = blocked  ? Plain(dst, Tag::nChw16c)
              : p.nhwc ? d.dst
                       : Plain(dst, Tag::any);
  d.any_weights = Plain(weights, Tag::any);
  d.strides = {p.stride_h, p.stride_w};
  // oneDNN counts dilation from 0 (0: dense), Paddle from 1.
  d.dilations = {p.dilation_h - 1, p.dilation_w - 1};
  d.pad_l = {p.pad_top, p.pad_left};
  d.pad_r = {p.pad_bottom, p.pad_right};
  return d;
}

dnnl::primitive_attr UserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::convolution_forward::primitive_desc ForwardPd(const Descs& d) {
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
      d.any_src, d.any_weights, d.any_dst, d.strides, d.dilations, d.pad_l,
      d.pad_r);
  return dnnl::convolution_forward::primitive_desc(desc, UserScratchpad(),
                                                   Engine());
}

// The fused form's attributes: the user scratchpad, the activation as a
// post-op.
// `binary_residual`: the residual (p.residual) read from its own buffer
// as a binary add, of `dst`'s layout (oneDNN's matmul); else summed into
// dst, which holds it (a binary add would take oneDNN's brgemm
// convolutions off the shape: its older kernels run).
dnnl::primitive_attr FusedAttr(const DnnlConvParams& p,
                               const memory::desc* binary_residual) {
  dnnl::primitive_attr attr = UserScratchpad();
  if (p.activation != 0 || p.residual) {
    dnnl::post_ops ops;
    if (p.residual && binary_residual != nullptr) {
      ops.append_binary(dnnl::algorithm::binary_add, *binary_residual);
    } else if (p.residual) {
      ops.append_sum(1.0f);
    }
    if (p.activation == 0) {
      // The residual alone.
    } else if (p.activation == 1) {
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    } else if (p.activation == 2) {
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.0f,
                         p.threshold);
    } else if (p.activation == 3) {  // relu's alpha: the slope below 0
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, p.threshold,
                         0.0f);
    } else {  // s * min(max(s + 3, 0), 6) / 6
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_hardswish, 0.0f, 0.0f);
    }
    attr.set_post_ops(ops);
  }
  return attr;
}

// A channels-last 1x1 convolution of stride 1 without padding or groups is
// a product [N*H*W, C] x [C, M] of the tensors as they lie. oneDNN's matmul
// runs it at least as fast as its 1x1 convolution on every shape measured
// (bench/README.md, "Kernels"), and up to 10% faster where the filter
// streams from memory (MobileNet's 1x1s at batch 1) or is wide (1024x1024
// at batch 32: 1.29 -> 1.06 ms). Of stride s, the same product of the
// pixels it reads, gathered first (ResNet's downsampling 1x1s, stride 2:
// 1024 -> 2048 on 4x4 at batch 256 26.1 -> 16.6 ms with the gather, 512 ->
// 1024 on 8x8 18.3 -> 16.4, 256 -> 512 on 16x16 21.9 -> 17.8; at batch 1
// 95 -> 62 us).
bool Pointwise(const DnnlConvParams& p) {
  return p.nhwc && p.groups == 1 && p.kh == 1 && p.kw == 1 &&
         p.stride_h == p.stride_w && p.stride_h >= 1 && p.dilation_h == 1 &&
         p.dilation_w == 1 && p.pad_top == 0 && p.pad_bottom == 0 &&
         p.pad_left == 0 && p.pad_right == 0 &&
         p.oh == (p.h - 1) / p.stride_h + 1 &&
         p.ow == (p.w - 1) / p.stride_w + 1;
}

// The fused form's forward: bias and activation inside the primitive.
dnnl::convolution_forward::primitive_desc FusedForwardPd(
    const Descs& d, const DnnlConvParams& p) {
  const memory::desc bias = Plain({p.m}, Tag::a);
  dnnl::convolution_forward::desc desc =
      p.bias
          ? dnnl::convolution_forward::desc(
                dnnl::prop_kind::forward_inference,
                dnnl::algorithm::convolution_direct, d.any_src, d.any_weights,
                bias, d.any_dst, d.strides, d.dilations, d.pad_l, d.pad_r)
          : dnnl::convolution_forward::desc(
                dnnl::prop_kind::forward_inference,
                dnnl::algorithm::convolution_direct, d.any_src, d.any_weights,
                d.any_dst, d.strides, d.dilations, d.pad_l, d.pad_r);
  return dnnl::convolution_forward::primitive_desc(desc, FusedAttr(p),
                                                   Engine());
}

}  // namespace parex::cpu::conv_descs

#endif  // PAREX_WITH_DNNL
