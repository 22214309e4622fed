// conv2d and conv2d_grad on CPU (NCHW), also serving depthwise_conv2d and
// its gradient (the same op with groups) and conv3d / conv3d_grad (NCDHW,
// vol2col in place of im2col; REQUIRES below with a depth dim added). fp32 goes
// through oneDNN's primitives where parex was built with it
// (kernels/cpu/spatial/dnnl_conv.h); fp64, and fp32 where oneDNN declines or is
// switched off, through im2col + one GEMM per image and group (cpu::Gemm); a
// 1x1 convolution with stride 1 and no padding multiplies the image directly.
// With data_format NHWC both run in conv2d_nhwc.cc (what they share:
// conv_shape.h).
//
// REQUIRES (ensured by the schema's shape inference, which runs first):
// Input [N,C,H,W], Filter [M,C/groups,kh,kw], Output / Output@GRAD
// [N,M,oh,ow] as inferred; Bias has M values; ResidualData has Output's dims.
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "base/checked_math.h"
#include "kernels/allocator.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/fused_activation.h"
#include "kernels/cpu/spatial/column_scratch.h"
#include "kernels/cpu/spatial/conv_shape.h"
#include "kernels/cpu/spatial/dnnl_conv.h"
#include "kernels/cpu/spatial/im2col.h"

namespace parex {
namespace {

using cpu::WindowDim;
using cpu::conv::ConstantFilter;
using cpu::conv::ConvShape;
using cpu::conv::FusedActivation;
using cpu::conv::GetConvShape;
using cpu::conv::IsChannelsLast;
using cpu::conv::ReadFusedActivation;

// oneDNN's terms for `s` (cpu::conv::DnnlParams); false for fp64.
template <typename T>
bool DnnlParams(const ConvShape& s, cpu::DnnlConvParams* p) {
  return std::is_same<T, float>::value && cpu::conv::DnnlParams(s, p);
}

// DnnlParams, where oneDNN is also the faster path (cpu::DnnlConvChosen).
template <typename T>
bool UseDnnl(const ConvShape& s, cpu::DnnlConvParams* p) {
  return DnnlParams<T>(s, p) && cpu::DnnlConvChosen(*p);
}

template <typename T>
T* ColumnScratch(const ConvShape& s) {
  return cpu::ColumnScratch<T>(s.col_rows, s.col_cols);
}

Status ScratchError(const KernelContext& ctx, const ConvShape& s) {
  return ResourceExhausted(
      ctx.op().Label() + ": im2col columns of " + std::to_string(s.col_rows) +
      " x " + std::to_string(s.col_cols) + " elements cannot be allocated on " +
      ctx.place().ToString());
}

// The im2col matrix [col_rows, col_cols] of group g of image n.
template <typename T>
const T* Columns(const ConvShape& s, const T* input, int64_t n, int64_t g,
                 T* scratch) {
  const T* image = input + (n * s.c + g * s.c_per_group) * s.in_volume;
  if (s.direct) return image;
  if (s.volumetric) {
    cpu::Vol2Col(image, s.c_per_group, s.d, s.h, s.w, scratch);
  } else {
    cpu::Im2Col(image, s.c_per_group, s.h, s.w, scratch);
  }
  return scratch;
}

// plane[i] = act(plane[i] + add (+ res[i])); kAct: FusedActivation's kind
// (cpu/fused_activation.h), `threshold` its parameter.
template <typename T, int kAct, bool kResidual>
void EpiloguePlane(T* plane, int64_t size, T add, const T* res, T threshold) {
  for (int64_t i = 0; i < size; ++i) {
    T v = plane[i] + add;
    if constexpr (kResidual) v += res[i];
    plane[i] = cpu::ApplyFusedActivation<kAct>(v, threshold);
  }
}

template <typename T, bool kResidual, typename Run>
void RunEpilogue(int kind, const Run& run) {
  switch (kind) {
    case 0:
      return run(EpiloguePlane<T, 0, kResidual>);
    case 1:
      return run(EpiloguePlane<T, 1, kResidual>);
    case 2:
      return run(EpiloguePlane<T, 2, kResidual>);
    case 3:
      return run(EpiloguePlane<T, 3, kResidual>);
    default:
      return run(EpiloguePlane<T, 4, kResidual>);
  }
}

// Bias, ResidualData and fuse_activation: the fused forms (MKLDNN's, which
// Paddle files may carry, and parex's inference fusions), in one pass over
// each output plane. The activations compute as their ops.
template <typename T>
Status AddEpilogue(const KernelContext& ctx, const ConvShape& s, T* out) {
  const Tensor* bias = ctx.Input("Bias");
  const Tensor* residual = ctx.Input("ResidualData");
  PAREX_ASSIGN_OR_RETURN(FusedActivation act, ReadFusedActivation(ctx));
  if (bias == nullptr && residual == nullptr && act.kind == 0) {
    return Status::Ok();
  }
  const T* b = bias != nullptr ? bias->data<T>() : nullptr;
  const T* r = residual != nullptr ? residual->data<T>() : nullptr;
  const T threshold = static_cast<T>(act.threshold);
  const int kind = act.kind;
  auto run = [&](auto plane_fn) {
    for (int64_t n = 0; n < s.n; ++n) {
      for (int64_t m = 0; m < s.m; ++m) {
        const int64_t first = (n * s.m + m) * s.col_cols;
        plane_fn(out + first, s.col_cols, b != nullptr ? b[m] : T(0),
                 r != nullptr ? r + first : nullptr, threshold);
      }
    }
  };
  // One loop per form, each without branches (vectorised at -O2).
  if (r != nullptr) {
    RunEpilogue<T, true>(kind, run);
  } else {
    RunEpilogue<T, false>(kind, run);
  }
  return Status::Ok();
}

// conv2d through oneDNN (fp32 only; UseDnnl said yes). Without
// ResidualData the fused form's Bias and activation run inside the
// primitive (*fused), with the filter's reorder kept when the op says the
// filter is constant (constant_filter, set by the inference fusions).
// False when oneDNN declines: im2col serves the op.
template <typename T>
bool DnnlForward(KernelContext& ctx, cpu::DnnlConvParams params,
                 const Tensor& input, const Tensor& filter, T* out,
                 bool* fused) {
  cpu::DnnlConv* conv = ctx.State<cpu::DnnlConv>();
  const auto* src = reinterpret_cast<const float*>(input.data<T>());
  const auto* weights = reinterpret_cast<const float*>(filter.data<T>());
  const bool constant = ConstantFilter(ctx);
  StatusOr<FusedActivation> act = ReadFusedActivation(ctx);
  const Tensor* bias = ctx.Input("Bias");
  if (act.ok() && ctx.Input("ResidualData") == nullptr &&
      (bias != nullptr || act->kind != 0)) {
    cpu::DnnlConvParams with = params;
    with.bias = bias != nullptr;
    with.activation = act->kind;
    with.threshold = act->kind == 2 || act->kind == 3 ? act->threshold : 0.0f;
    const float* b = bias != nullptr
                         ? reinterpret_cast<const float*>(bias->data<T>())
                         : nullptr;
    if (conv->Forward(with, src, weights, reinterpret_cast<float*>(out), b,
                      constant)) {
      *fused = true;
      return true;
    }
  }
  return conv->Forward(params, src, weights, reinterpret_cast<float*>(out),
                       nullptr, constant);
}

template <typename T>
Status Conv2dKernel(KernelContext& ctx) {
  if (IsChannelsLast(ctx)) return cpu::conv::Conv2dNhwc(ctx, DTypeOf<T>());
  const Tensor& input = *ctx.Input("Input");
  const Tensor& filter = *ctx.Input("Filter");
  Tensor* output = ctx.Output("Output");
  const ConvShape s =
      GetConvShape(ctx, input.dims(), filter.dims(), output->dims());
  T* out = output->data<T>();
  if (output->numel() == 0) return Status::Ok();
  cpu::DnnlConvParams dnnl_params;
  bool fused = false;  // oneDNN applied Bias and the activation too
  if (s.col_rows == 0) {
    std::fill_n(out, output->numel(), T(0));
  } else if (UseDnnl<T>(s, &dnnl_params) &&
             DnnlForward(ctx, dnnl_params, input, filter, out, &fused)) {
    // oneDNN wrote the output.
  } else {
    T* scratch = s.direct ? nullptr : ColumnScratch<T>(s);
    if (!s.direct && scratch == nullptr) return ScratchError(ctx, s);
    for (int64_t n = 0; n < s.n; ++n) {
      for (int64_t g = 0; g < s.groups; ++g) {
        const T* col = Columns(s, input.data<T>(), n, g, scratch);
        cpu::Gemm<T>(false, false, s.m_per_group, s.col_cols, s.col_rows, T(1),
                     filter.data<T>() + g * s.m_per_group * s.col_rows,
                     s.col_rows, col, s.col_cols, T(0),
                     out + (n * s.m + g * s.m_per_group) * s.col_cols,
                     s.col_cols);
      }
    }
  }
  return fused ? Status::Ok() : AddEpilogue<T>(ctx, s, out);
}

// dW_g[Mg, CKK] = sum over images of dOut_g[Mg, OHW] * col^T (im2col).
template <typename T>
Status FilterGradByIm2col(const KernelContext& ctx, const ConvShape& s,
                          const T* input, const T* dout, Tensor* dfilter) {
  const bool empty = s.col_rows == 0 || s.col_cols == 0 || s.m_per_group == 0;
  const int64_t filter_group = s.m_per_group * s.col_rows;
  T* df = dfilter->data<T>();
  std::fill_n(df, dfilter->numel(), T(0));
  T* scratch = empty || s.direct ? nullptr : ColumnScratch<T>(s);
  if (!empty && !s.direct && scratch == nullptr) return ScratchError(ctx, s);
  for (int64_t n = 0; n < s.n && !empty; ++n) {
    for (int64_t g = 0; g < s.groups; ++g) {
      const T* col = Columns(s, input, n, g, scratch);
      cpu::Gemm<T>(false, true, s.m_per_group, s.col_rows, s.col_cols, T(1),
                   dout + (n * s.m + g * s.m_per_group) * s.col_cols,
                   s.col_cols, col, s.col_cols, T(1), df + g * filter_group,
                   s.col_rows);
    }
  }
  return Status::Ok();
}

// dcol[CKK, OHW] = W_g^T * dOut_g per image and group, scattered back to
// the image (col2im; a direct 1x1 writes the image itself).
template <typename T>
Status InputGradByIm2col(const KernelContext& ctx, const ConvShape& s,
                         const T* filter, const T* dout, Tensor* dinput) {
  const bool empty = s.col_rows == 0 || s.col_cols == 0 || s.m_per_group == 0;
  const int64_t filter_group = s.m_per_group * s.col_rows;
  T* di = dinput->data<T>();
  const int64_t plane = s.in_volume;
  if (!s.direct || empty) std::fill_n(di, dinput->numel(), T(0));
  T* scratch = empty || s.direct ? nullptr : ColumnScratch<T>(s);
  if (!empty && !s.direct && scratch == nullptr) return ScratchError(ctx, s);
  for (int64_t n = 0; n < s.n && !empty; ++n) {
    for (int64_t g = 0; g < s.groups; ++g) {
      T* image = di + (n * s.c + g * s.c_per_group) * plane;
      T* dcol = s.direct ? image : scratch;
      cpu::Gemm<T>(true, false, s.col_rows, s.col_cols, s.m_per_group, T(1),
                   filter + g * filter_group, s.col_rows,
                   dout + (n * s.m + g * s.m_per_group) * s.col_cols,
                   s.col_cols, T(0), dcol, s.col_cols);
      if (s.direct) continue;
      if (s.volumetric) {
        cpu::Col2Vol(dcol, s.c_per_group, s.d, s.h, s.w, image);
      } else {
        cpu::Col2Im(dcol, s.c_per_group, s.h, s.w, image);
      }
    }
  }
  return Status::Ok();
}

template <typename T>
Status Conv2dGradKernel(KernelContext& ctx) {
  if (IsChannelsLast(ctx)) {
    return cpu::conv::Conv2dGradNhwc(ctx, DTypeOf<T>());
  }
  const Tensor& input = *ctx.Input("Input");
  const Tensor& filter = *ctx.Input("Filter");
  const Tensor& dout_t = *ctx.Input("Output@GRAD");
  const ConvShape s =
      GetConvShape(ctx, input.dims(), filter.dims(), dout_t.dims());
  const T* dout = dout_t.data<T>();
  cpu::DnnlConvParams dnnl_params;
  const bool dnnl = UseDnnl<T>(s, &dnnl_params);
  auto f32 = [](const T* p) { return reinterpret_cast<const float*>(p); };
  if (Tensor* dfilter = ctx.Output("Filter@GRAD")) {
    if (!dnnl || !ctx.State<cpu::DnnlConv>()->BackwardWeights(
                     dnnl_params, f32(input.data<T>()), f32(dout),
                     reinterpret_cast<float*>(dfilter->data<T>()))) {
      PAREX_RETURN_IF_ERROR(
          FilterGradByIm2col<T>(ctx, s, input.data<T>(), dout, dfilter));
    }
  }
  if (Tensor* dinput = ctx.Output("Input@GRAD")) {
    if (!dnnl || !ctx.State<cpu::DnnlConv>()->BackwardData(
                     dnnl_params, f32(filter.data<T>()), f32(dout),
                     reinterpret_cast<float*>(dinput->data<T>()))) {
      PAREX_RETURN_IF_ERROR(
          InputGradByIm2col<T>(ctx, s, filter.data<T>(), dout, dinput));
    }
  }
  if (Tensor* dbias = ctx.Output("Bias@GRAD")) {
    T* db = dbias->data<T>();
    std::fill_n(db, dbias->numel(), T(0));
    for (int64_t n = 0; n < s.n; ++n) {
      for (int64_t m = 0; m < s.m; ++m) {
        const T* g = dout + (n * s.m + m) * s.col_cols;
        for (int64_t i = 0; i < s.col_cols; ++i) db[m] += g[i];
      }
    }
  }
  return Status::Ok();
}

}  // namespace

void RegisterConv2dKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "conv2d", Conv2dKernel, float, double);
  PAREX_CPU_KERNEL(r, "conv2d_grad", Conv2dGradKernel, float, double);
  // depthwise_conv2d: a grouped conv2d (no Bias / ResidualData slots).
  PAREX_CPU_KERNEL(r, "depthwise_conv2d", Conv2dKernel, float, double);
  PAREX_CPU_KERNEL(r, "depthwise_conv2d_grad", Conv2dGradKernel, float, double);
  cpu::conv::RegisterNativeChannelsLastConvs();
  // conv3d: the same kernels over volumes (vol2col; never oneDNN).
  PAREX_CPU_KERNEL(r, "conv3d", Conv2dKernel, float, double);
  PAREX_CPU_KERNEL(r, "conv3d_grad", Conv2dGradKernel, float, double);
}

}  // namespace parex
