// conv2d / depthwise_conv2d and their gradients with data_format NHWC, run
// by oneDNN on the NHWC tensors themselves (no transposes): the forward with
// its fused Bias, ResidualData and activation inside the primitive, the
// gradient through oneDNN's backward primitives. Where oneDNN cannot run a
// configuration (off, fp64, reference code only), the predicates registered
// here say so and the op runs on its NCHW view (kernels/channels_last.h).
#include <algorithm>
#include <string>

#include "graph/ir/spec/channels_last.h"
#include "kernels/channels_last.h"
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
};

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
  p->threshold = act->kind == 2 ? act->threshold : 0.0f;
  p->residual = residual != nullptr;
  p->nhwc = true;
  return true;
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
    st->known = true;
    st->mode = mode;
    st->input = input->dims();
    st->filter = filter->dims();
    st->output = output->dims();
    st->constant_filter = ConstantFilter(ctx);
    st->supported =
        DeriveNhwcParams(ctx, *input, *filter, *output, &st->params) &&
        st->ForwardSupported(st->params);
  }
  return st->supported ? st : nullptr;
}

bool NativeChannelsLastConv(KernelContext& ctx, DType dtype) {
  return dtype == DType::kFP32 && ctx.place().is_cpu() && IsChannelsLast(ctx) &&
         NativeNhwc(ctx) != nullptr;
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
  DnnlConvParams params;
};

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
  }
  return st->supported ? st : nullptr;
}

bool NativeChannelsLastConvGrad(KernelContext& ctx, DType dtype) {
  return dtype == DType::kFP32 && ctx.place().is_cpu() && IsChannelsLast(ctx) &&
         NativeNhwcGrad(ctx) != nullptr;
}

// conv2d_grad on the NHWC tensors: oneDNN's backward primitives, Bias@GRAD
// (a fused conv's) the sum of Output@GRAD over every pixel.
}  // namespace

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
  if (Tensor* dfilter = ctx.Output("Filter@GRAD")) {
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
