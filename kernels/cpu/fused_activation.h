// The activations a fused product's epilogue applies (a convolution's
// fuse_activation, an fc's activation_type), each as its op computes it
// (kernels/cpu/activation_kernels.cc): one definition for every path that
// fuses them (im2col's epilogue, SkinnyGemm's; oneDNN's post-ops are
// dnnl_conv_descs.cc's).
#pragma once

#include <algorithm>

namespace parex::cpu {

// Kinds (conv::FusedActivation::kind, SkinnyEpilogue::activation): 0 none,
// 1 relu, 2 relu6 capped at `param`, 3 leaky_relu of slope `param` below 0,
// 4 hard_swish of Paddle's defaults (x * min(max(x + 3, 0), 6) / 6).
template <int kKind, typename T>
inline T ApplyFusedActivation(T v, T param) {
  if constexpr (kKind == 1) return v > T(0) ? v : T(0);
  if constexpr (kKind == 2) return std::min(std::max(v, T(0)), param);
  if constexpr (kKind == 3) return v > T(0) ? v : param * v;
  if constexpr (kKind == 4) {
    return v * std::min(std::max(v + T(3), T(0)), T(6)) / T(6);
  }
  return v;
}

// The same, its kind known only at run time.
template <typename T>
inline T ApplyFusedActivation(int kind, T v, T param) {
  switch (kind) {
    case 1:
      return ApplyFusedActivation<1>(v, param);
    case 2:
      return ApplyFusedActivation<2>(v, param);
    case 3:
      return ApplyFusedActivation<3>(v, param);
    case 4:
      return ApplyFusedActivation<4>(v, param);
    default:
      return v;
  }
}

}  // namespace parex::cpu
