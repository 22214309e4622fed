// conv2d / depthwise_conv2d and their gradients with data_format NHWC, run
// by oneDNN on the NHWC tensors themselves (no transposes): the forward with
// its fused Bias, ResidualData and activation inside the primitive, the
// gradient through oneDNN's backward primitives; a constant 1x1 on few
// pixels by SkinnyGemm, the filter's gradient on tiny planes by one GEMM
// over the patches. Where oneDNN cannot run a configuration (off, fp64,
// reference code only), the predicates registered here say so and the op
// runs on its NCHW view (kernels/channels_last.h).
#include <algorithm>
#include <string>
#include <vector>

#include "graph/ir/spec/channels_last.h"
#include "kernels/channels_last.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/skinny_gemm.h"
#include "kernels/cpu/spatial/column_scratch.h"
#include "kernels/cpu/spatial/conv_shape.h"

namespace parex::cpu::conv {
namespace {

// What a channels-last conv keeps between runs besides its primitives: the
// oneDNN terms derived for the dims it last saw and whether oneDNN takes
// them, so that a steady run (the predicate, then the kernel) reads no
// attribute and derives no shape again.
struct NhwcConv : DnnlConv {
  bool known = false;
  DnnlConvMode mode = DnnlConvMode::kNever;
  Dims input, filter, output;
  bool supported = false;
  DnnlConvParams params;
  bool constant_filter = false;
  // A constant 1x1 filter on few pixels (SkinnyOneByOne), packed once.
  bool skinny = false;
  SkinnyPanels panels;
  const float* packed_from = nullptr;
};

// A 1x1 convolution of stride 1 and no padding by a constant filter: the
// product [N*H*W, C] x [C, M], SkinnyGemm's where the pixels are few and
// the filter large (MobileNet's at batch 1).
bool SkinnyOneByOne(const DnnlConvParams& p, bool constant_filter) {
  return constant_filter && p.groups == 1 && p.kh == 1 && p.kw == 1 &&
         p.stride_h == 1 && p.stride_w == 1 && p.pad_top == 0 &&
         p.pad_bottom == 0 && p.pad_left == 0 && p.pad_right == 0 &&
         SkinnyGemmAvailable() && SkinnyGemmFaster(p.n * p.oh * p.ow, p.c, p.m);
}

// The terms of a channels-last fp32 conv2d run by oneDNN on the NHWC tensors
// themselves, its Bias, ResidualData and activation inside the primitive;
// false where that cannot be (a residual of another shape or dtype).
bool DeriveNhwcParams(const KernelContext& ctx, const Tensor& input,
                      const Tensor& filter, const Tensor& output,
                      DnnlConvParams* p) {
  const Tensor* residual = ctx.Input("ResidualData");
  if (residual != nullptr && (residual->dims() != output.dims() ||
                              residual->dtype() != DType::kFP32)) {
    return false;
  }
  const ConvShape s =
      GetConvShape(ctx, ToChannelsFirst(input.dims()), filter.dims(),
                   ToChannelsFirst(output.dims()));
  if (!DnnlParams(s, p)) return false;
  StatusOr<FusedActivation> act = ReadFusedActivation(ctx);
  if (!act.ok()) return false;
  p->bias = ctx.Input("Bias") != nullptr;
  p->activation = act->kind;
  p->threshold = act->kind == 2 || act->kind == 3 ? act->threshold : 0.0f;
  p->residual = residual != nullptr;
  p->nhwc = true;
  return true;
}

// `st` derived for these tensors under `mode`.
void Derive(const KernelContext& ctx, DnnlConvMode mode, const Tensor& input,
            const Tensor& filter, const Tensor& output, NhwcConv* st) {
  st->known = true;
  st->mode = mode;
  st->input = input.dims();
  st->filter = filter.dims();
  st->output = output.dims();
  st->constant_filter = ConstantFilter(ctx);
  st->supported = DeriveNhwcParams(ctx, input, filter, output, &st->params) &&
                  st->ForwardSupported(st->params);
  st->skinny = st->supported && SkinnyOneByOne(st->params, st->constant_filter);
  st->packed_from = nullptr;
}

// A channels-last conv's state with its terms for this run's dims; null
// where oneDNN cannot run it on the NHWC tensors (off, or the op's
// tensors are not 4-D), and the op then runs on its NCHW view
// (kernels/channels_last.h).
NhwcConv* NativeNhwc(KernelContext& ctx) {
  if (!DnnlAvailable()) return nullptr;
  const DnnlConvMode mode = GetDnnlConvMode();
  if (mode == DnnlConvMode::kNever) return nullptr;
  const Tensor* input = ctx.Input("Input");
  const Tensor* filter = ctx.Input("Filter");
  const Tensor* output = ctx.Output("Output");
  if (input == nullptr || filter == nullptr || output == nullptr ||
      input->rank() != 4 || filter->rank() != 4 || output->rank() != 4) {
    return nullptr;
  }
  NhwcConv* st = ctx.State<NhwcConv>();
  if (!st->known || st->mode != mode || st->input != input->dims() ||
      st->filter != filter->dims() || st->output != output->dims()) {
    Derive(ctx, mode, *input, *filter, *output, st);
  }
  return st->supported ? st : nullptr;
}

bool NativeChannelsLastConv(KernelContext& ctx, DType dtype) {
  return dtype == DType::kFP32 && ctx.place().is_cpu() && IsChannelsLast(ctx) &&
         NativeNhwc(ctx) != nullptr;
}

// The conv of `conv` by SkinnyGemm, its filter packed on the first run.
void RunSkinny(KernelContext& ctx, NhwcConv* conv, const Tensor* bias,
               const Tensor* residual, Tensor* output) {
  const DnnlConvParams& p = conv->params;
  const float* filter = ctx.Input("Filter")->data<float>();
  if (conv->packed_from != filter) {
    conv->panels.Pack(p.c, p.m, /*trans=*/true, filter);
    conv->packed_from = filter;
  }
  SkinnyEpilogue e;
  e.bias = bias != nullptr ? bias->data<float>() : nullptr;
  e.residual = residual != nullptr ? residual->data<float>() : nullptr;
  e.activation = p.activation;
  e.threshold = p.threshold;
  SkinnyGemm(p.n * p.oh * p.ow, ctx.Input("Input")->data<float>(), conv->panels,
             e, output->data<float>());
}

}  // namespace

Status Conv2dNhwc(KernelContext& ctx, DType dtype) {
  NhwcConv* conv = dtype == DType::kFP32 ? NativeNhwc(ctx) : nullptr;
  if (conv == nullptr) {
    return Internal(ctx.op().Label() +
                    ": a channels-last conv2d reached its kernel without its "
                    "NCHW view");
  }
  const Tensor* bias = ctx.Input("Bias");
  Tensor* output = ctx.Output("Output");
  const Tensor* residual =
      conv->params.residual ? ctx.Input("ResidualData") : nullptr;
  if (conv->skinny) {
    RunSkinny(ctx, conv, bias, residual, output);
    return Status::Ok();
  }
  const bool ran = conv->Forward(
      conv->params,
      reinterpret_cast<const float*>(ctx.Input("Input")->data<float>()),
      reinterpret_cast<const float*>(ctx.Input("Filter")->data<float>()),
      reinterpret_cast<float*>(output->data<float>()),
      bias != nullptr ? reinterpret_cast<const float*>(bias->data<float>())
                      : nullptr,
      conv->constant_filter,
      residual != nullptr
          ? reinterpret_cast<const float*>(residual->data<float>())
          : nullptr);
  if (!ran) return Internal(ctx.op().Label() + ": oneDNN declined NHWC");
  return Status::Ok();
}

namespace {

// What a channels-last conv2d_grad keeps between runs: the oneDNN terms
// derived for the dims it last saw, and whether oneDNN takes them.
struct NhwcConvGrad : DnnlConv {
  bool known = false;
  DnnlConvMode mode = DnnlConvMode::kNever;
  Dims input, filter, dout;
  bool data = false, weights = false;  // Input@GRAD, Filter@GRAD wanted
  bool supported = false;
  bool gemm_weights = false;  // Filter@GRAD by FilterGradByGemm
  DnnlConvParams params;
};

// Whether Filter@GRAD of `p` is faster as FilterGradByGemm's GEMM than
// through oneDNN's NHWC backward-weights primitive, which runs far below its
// forward's speed on tiny output planes. kernel_bench's
// parex_conv2d_grad_nhwc (both gradients, batch 32, one thread, one run),
// oneDNN -> this: ResNet-18's 512->512 3x3 on 2x2 22.3 -> 11.4 ms, 256->256
// on 4x4 11.3 -> 10.3, 256->512 1x1 of stride 2 0.88 -> 0.69, ResNet-50's
// 512->2048 1x1 on 2x2 9.6 -> 6.0, 1024->256 on 4x4 6.7 -> 5.7; on 8x8
// oneDNN's stays ahead (128->128 3x3 11.5 against 14.6, 512->128 1x1 6.4
// against 7.2). ResNet-18's training step at batch 32 on one core: 370-390
// -> 310-330 ms in the same minutes (the VM's slow spell).
bool FilterGradByGemmFaster(const DnnlConvParams& p) {
  return p.groups == 1 && p.oh * p.ow <= 16;
}

// The columns of FilterGradByGemm for images [n0, n0 + count): a row per
// output pixel, its patch in OIHW's order (channel, then filter row and
// column), zeros where the patch leaves the image. Each row is written in
// order while kh * kw read streams walk along the patch's pixels' channels.
void NhwcPatchColumns(const DnnlConvParams& p, const float* x, int64_t n0,
                      int64_t count, float* col) {
  const int64_t kk = p.kh * p.kw;
  thread_local std::vector<const float*> taps;
  taps.resize(static_cast<size_t>(kk));
  for (int64_t n = n0; n < n0 + count; ++n) {
    for (int64_t oy = 0; oy < p.oh; ++oy) {
      for (int64_t ox = 0; ox < p.ow; ++ox) {
        for (int64_t ky = 0; ky < p.kh; ++ky) {
          for (int64_t kx = 0; kx < p.kw; ++kx) {
            const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dilation_h;
            const int64_t ix = ox * p.stride_w - p.pad_left + kx * p.dilation_w;
            const bool inside = iy >= 0 && iy < p.h && ix >= 0 && ix < p.w;
            taps[ky * p.kw + kx] =
                inside ? x + ((n * p.h + iy) * p.w + ix) * p.c : nullptr;
          }
        }
        for (int64_t c = 0; c < p.c; ++c) {
          for (int64_t k = 0; k < kk; ++k) {
            col[c * kk + k] = taps[k] != nullptr ? taps[k][c] : 0.0f;
          }
        }
        col += p.c * kk;
      }
    }
  }
}

// Filter@GRAD of a channels-last conv (groups 1) as GEMMs over the batch's
// output pixels: dW[M, C*KH*KW] += dY[P, M]^T * col[P, C*KH*KW], a few
// images' columns at a time (on a tiny plane the whole batch's: one GEMM of
// inner extent N*OH*OW), written as OIHW itself (no reorder back).
Status FilterGradByGemm(const KernelContext& ctx, const DnnlConvParams& p,
                        const float* x, const float* dy, float* dw) {
  const int64_t ckk = p.c * p.kh * p.kw, pixels = p.oh * p.ow;
  if (p.n == 0 || pixels == 0 || ckk == 0) {
    std::fill_n(dw, p.m * ckk, 0.0f);
    return Status::Ok();
  }
  // Columns of about 2M floats (8 MB) a chunk, at least an image.
  const int64_t per_chunk = std::max<int64_t>(
      1, (int64_t{1} << 21) / std::max<int64_t>(1, pixels * ckk));
  float* col = ColumnScratch<float>(std::min(per_chunk, p.n) * pixels, ckk);
  if (col == nullptr) {
    return ResourceExhausted(ctx.op().Label() +
                             ": no memory for the filter gradient's columns");
  }
  for (int64_t n0 = 0; n0 < p.n; n0 += per_chunk) {
    const int64_t count = std::min(per_chunk, p.n - n0);
    NhwcPatchColumns(p, x, n0, count, col);
    Gemm<float>(true, false, p.m, ckk, count * pixels, 1.0f,
                dy + n0 * pixels * p.m, p.m, col, ckk, n0 == 0 ? 0.0f : 1.0f,
                dw, ckk);
  }
  return Status::Ok();
}

// Whether `st` was derived for these tensors, outputs and mode.
bool DerivedFor(const NhwcConvGrad& st, DnnlConvMode mode, const Tensor& input,
                const Tensor& filter, const Tensor& dout, bool data,
                bool weights) {
  return st.known && st.mode == mode && st.input == input.dims() &&
         st.filter == filter.dims() && st.dout == dout.dims() &&
         st.data == data && st.weights == weights;
}

// A channels-last conv2d_grad's state with its terms for this run's dims;
// null where oneDNN cannot run it on the NHWC tensors (the op then runs on
// its NCHW view, kernels/channels_last.h).
NhwcConvGrad* NativeNhwcGrad(KernelContext& ctx) {
  const DnnlConvMode mode = GetDnnlConvMode();
  if (!DnnlAvailable() || mode == DnnlConvMode::kNever) {
    return nullptr;
  }
  const Tensor* input = ctx.Input("Input");
  const Tensor* filter = ctx.Input("Filter");
  const Tensor* dout = ctx.Input("Output@GRAD");
  if (input == nullptr || filter == nullptr || dout == nullptr ||
      input->rank() != 4 || filter->rank() != 4 || dout->rank() != 4) {
    return nullptr;
  }
  const bool data = ctx.Output("Input@GRAD") != nullptr;
  const bool weights = ctx.Output("Filter@GRAD") != nullptr;
  NhwcConvGrad* st = ctx.State<NhwcConvGrad>();
  if (!DerivedFor(*st, mode, *input, *filter, *dout, data, weights)) {
    st->known = true;
    st->mode = mode;
    st->input = input->dims();
    st->filter = filter->dims();
    st->dout = dout->dims();
    st->data = data;
    st->weights = weights;
    const ConvShape s =
        GetConvShape(ctx, ToChannelsFirst(input->dims()), filter->dims(),
                     ToChannelsFirst(dout->dims()));
    st->supported = DnnlParams(s, &st->params);
    st->params.nhwc = true;
    st->supported =
        st->supported && st->BackwardSupported(st->params, data, weights);
    st->gemm_weights = weights && mode == DnnlConvMode::kWhereFaster &&
                       FilterGradByGemmFaster(st->params);
  }
  return st->supported ? st : nullptr;
}

bool NativeChannelsLastConvGrad(KernelContext& ctx, DType dtype) {
  return dtype == DType::kFP32 && ctx.place().is_cpu() && IsChannelsLast(ctx) &&
         NativeNhwcGrad(ctx) != nullptr;
}

}  // namespace

// conv2d_grad on the NHWC tensors: oneDNN's backward primitives (the
// filter's gradient by FilterGradByGemm on tiny planes), Bias@GRAD (a fused
// conv's) the sum of Output@GRAD over every pixel.
Status Conv2dGradNhwc(KernelContext& ctx, DType dtype) {
  NhwcConvGrad* conv = dtype == DType::kFP32 ? NativeNhwcGrad(ctx) : nullptr;
  if (conv == nullptr) {
    return Internal(ctx.op().Label() +
                    ": a channels-last conv2d_grad reached its kernel without "
                    "its NCHW view");
  }
  auto f32 = [](const Tensor* t) {
    return reinterpret_cast<const float*>(t->data<float>());
  };
  const Tensor* dout = ctx.Input("Output@GRAD");
  Tensor* dfilter = ctx.Output("Filter@GRAD");
  if (dfilter != nullptr && conv->gemm_weights) {
    PAREX_RETURN_IF_ERROR(
        FilterGradByGemm(ctx, conv->params, f32(ctx.Input("Input")), f32(dout),
                         reinterpret_cast<float*>(dfilter->data<float>())));
  } else if (dfilter != nullptr) {
    if (!conv->BackwardWeights(
            conv->params, f32(ctx.Input("Input")), f32(dout),
            reinterpret_cast<float*>(dfilter->data<float>()))) {
      return Internal(ctx.op().Label() + ": oneDNN declined NHWC");
    }
  }
  if (Tensor* dinput = ctx.Output("Input@GRAD")) {
    if (!conv->BackwardData(conv->params, f32(ctx.Input("Filter")), f32(dout),
                            reinterpret_cast<float*>(dinput->data<float>()))) {
      return Internal(ctx.op().Label() + ": oneDNN declined NHWC");
    }
  }
  if (Tensor* dbias = ctx.Output("Bias@GRAD")) {
    float* db = dbias->data<float>();
    const int64_t m = dout->dims()[3], pixels = dout->numel() / m;
    std::fill_n(db, dbias->numel(), 0.0f);
    for (int64_t i = 0; i < pixels; ++i) {
      const float* g = dout->data<float>() + i * m;
      for (int64_t k = 0; k < m; ++k) db[k] += g[k];
    }
  }
  return Status::Ok();
}

void RegisterNativeChannelsLastConvs() {
  RegisterNativeChannelsLast("conv2d", &NativeChannelsLastConv);
  RegisterNativeChannelsLast("depthwise_conv2d", &NativeChannelsLastConv);
  RegisterNativeChannelsLast("conv2d_grad", &NativeChannelsLastConvGrad);
  RegisterNativeChannelsLast("depthwise_conv2d_grad",
                             &NativeChannelsLastConvGrad);
}

}  // namespace parex::cpu::conv
