// conv2d and conv2d_grad on CPU (NCHW), also serving depthwise_conv2d and
// its gradient (the same op with groups) and conv3d / conv3d_grad (NCDHW,
// vol2col in place of im2col; REQUIRES below with a depth dim added). fp32 goes
// through oneDNN's primitives where parex was built with it
// (kernels/cpu/spatial/dnnl_conv.h); fp64, and fp32 where oneDNN declines or is
// switched off, through im2col + one GEMM per image and group (cpu::Gemm); a
// 1x1 convolution with stride 1 and no padding multiplies the image directly.
//
// REQUIRES (ensured by the schema's shape inference, which runs first):
// Input [N,C,H,W], Filter [M,C/groups,kh,kw], Output / Output@GRAD
// [N,M,oh,ow] as inferred; Bias has M values; ResidualData has Output's dims.
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "base/checked_math.h"
#include "graph/ir/spec/channels_last.h"
#include "kernels/allocator.h"
#include "kernels/channels_last.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/spatial/column_scratch.h"
#include "kernels/cpu/spatial/dnnl_conv.h"
#include "kernels/cpu/spatial/im2col.h"

namespace parex {
namespace {

using cpu::WindowDim;

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
                       const Dims& filter, const Dims& out) {
  ConvShape s;
  s.n = in[0];
  s.c = in[1];
  s.m = filter[0];
  s.groups = ctx.Attr<int>("groups");
  s.c_per_group = s.c / s.groups;
  s.m_per_group = s.m / s.groups;
  const int rank = static_cast<int>(in.size()) - 2;
  s.volumetric = rank == 3;
  WindowDim dims[3];
  for (int i = 0; i < rank; ++i) {
    dims[i].in = in[2 + i];
    dims[i].size = filter[2 + i];
    dims[i].out = out[2 + i];
  }
  const auto dilations = ctx.Attr<std::vector<int>>("dilations");
  cpu::ResolveWindows(ctx.Attr<std::string>("padding_algorithm"),
                      ctx.Attr<std::vector<int>>("strides"), &dilations,
                      ctx.Attr<std::vector<int>>("paddings"), dims, rank);
  s.d = s.volumetric ? dims[0] : WindowDim{1, 1, 1, 1, 1, 0, 0};
  s.h = dims[rank - 2];
  s.w = dims[rank - 1];
  s.col_rows = s.c_per_group * s.d.size * s.h.size * s.w.size;
  s.col_cols = s.d.out * s.h.out * s.w.out;
  s.in_volume = s.d.in * s.h.in * s.w.in;
  auto plain = [](const WindowDim& d) {
    return d.size == 1 && d.stride == 1 && d.pad_before == 0 &&
           d.pad_after == 0;
  };
  s.direct = plain(s.d) && plain(s.h) && plain(s.w);
  return s;
}

// oneDNN's terms for `s`; false when oneDNN cannot take it (fp64, 3-D,
// empty).
template <typename T>
bool DnnlParams(const ConvShape& s, cpu::DnnlConvParams* p) {
  if (!std::is_same<T, float>::value || s.volumetric) return false;
  if (s.n <= 0 || s.c <= 0 || s.m <= 0 || s.col_rows <= 0 || s.col_cols <= 0) {
    return false;
  }
  p->n = s.n;
  p->c = s.c;
  p->h = s.h.in;
  p->w = s.w.in;
  p->m = s.m;
  p->groups = s.groups;
  p->kh = s.h.size;
  p->kw = s.w.size;
  p->oh = s.h.out;
  p->ow = s.w.out;
  p->stride_h = s.h.stride;
  p->stride_w = s.w.stride;
  p->dilation_h = s.h.dilation;
  p->dilation_w = s.w.dilation;
  p->pad_top = s.h.pad_before;
  p->pad_bottom = s.h.pad_after;
  p->pad_left = s.w.pad_before;
  p->pad_right = s.w.pad_after;
  return true;
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

// plane[i] = act(plane[i] + add (+ res[i])); kAct 0: none, 1: relu, 2:
// relu6 (min(max(v, 0), threshold), as the relu6 op).
template <typename T, int kAct, bool kResidual>
void EpiloguePlane(T* plane, int64_t size, T add, const T* res, T threshold) {
  for (int64_t i = 0; i < size; ++i) {
    T v = plane[i] + add;
    if constexpr (kResidual) v += res[i];
    if constexpr (kAct == 1) v = v > T(0) ? v : T(0);
    if constexpr (kAct == 2) v = std::min(std::max(v, T(0)), threshold);
    plane[i] = v;
  }
}

// The fused form's activation: 0 none, 1 relu, 2 relu6 at `threshold`.
struct FusedActivation {
  int kind = 0;
  float threshold = 6.0f;
};

StatusOr<FusedActivation> ReadFusedActivation(const KernelContext& ctx) {
  FusedActivation a;
  if (!ctx.HasAttr("fuse_activation")) return a;
  const std::string act = ctx.Attr<std::string>("fuse_activation");
  if (act.empty()) return a;
  if (act != "relu" && act != "relu6") {
    return ctx.Error("fuse_activation '" + act +
                     "' is not one parex fuses (relu, relu6)");
  }
  a.kind = act == "relu" ? 1 : 2;
  const float alpha =
      ctx.HasAttr("fuse_alpha") ? ctx.Attr<float>("fuse_alpha") : 0.0f;
  if (alpha > 0.0f) a.threshold = alpha;
  return a;
}

// Bias, ResidualData and fuse_activation: the fused forms (MKLDNN's, which
// Paddle files may carry, and parex's inference fusions), in one pass over
// each output plane. The activations compute as the relu and relu6 ops.
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
    if (kind == 0) run(EpiloguePlane<T, 0, true>);
    if (kind == 1) run(EpiloguePlane<T, 1, true>);
    if (kind == 2) run(EpiloguePlane<T, 2, true>);
  } else {
    if (kind == 0) run(EpiloguePlane<T, 0, false>);
    if (kind == 1) run(EpiloguePlane<T, 1, false>);
    if (kind == 2) run(EpiloguePlane<T, 2, false>);
  }
  return Status::Ok();
}

// The op says its Filter is constant (set by the inference fusions): a
// kernel may keep what it derives from it.
bool ConstantFilter(const KernelContext& ctx) {
  return ctx.HasAttr("constant_filter") && ctx.Attr<bool>("constant_filter");
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
    with.threshold = act->kind == 2 ? act->threshold : 0.0f;
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

bool IsChannelsLast(const KernelContext& ctx) {
  return ctx.HasAttr("data_format") &&
         ctx.Attr<std::string>("data_format") == "NHWC";
}

// What a channels-last conv keeps between runs besides its primitives: the
// oneDNN terms derived for the dims it last saw and whether oneDNN takes
// them, so that a steady run (the predicate, then the kernel) reads no
// attribute and derives no shape again.
struct NhwcConv : cpu::DnnlConv {
  bool known = false;
  cpu::DnnlConvMode mode = cpu::DnnlConvMode::kNever;
  Dims input, filter, output;
  bool supported = false;
  cpu::DnnlConvParams params;
  bool constant_filter = false;
};

// The terms of a channels-last fp32 conv2d run by oneDNN on the NHWC tensors
// themselves, its Bias, ResidualData and activation inside the primitive;
// false where that cannot be (a residual of another shape or dtype).
bool DeriveNhwcParams(const KernelContext& ctx, const Tensor& input,
                      const Tensor& filter, const Tensor& output,
                      cpu::DnnlConvParams* p) {
  const Tensor* residual = ctx.Input("ResidualData");
  if (residual != nullptr && (residual->dims() != output.dims() ||
                              residual->dtype() != DType::kFP32)) {
    return false;
  }
  const ConvShape s =
      GetConvShape(ctx, ToChannelsFirst(input.dims()), filter.dims(),
                   ToChannelsFirst(output.dims()));
  if (!DnnlParams<float>(s, p)) return false;
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
  if (!cpu::DnnlAvailable()) return nullptr;
  const cpu::DnnlConvMode mode = cpu::GetDnnlConvMode();
  if (mode == cpu::DnnlConvMode::kNever) return nullptr;
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

template <typename T>
Status Conv2dNhwc(KernelContext& ctx) {
  NhwcConv* conv = std::is_same<T, float>::value ? NativeNhwc(ctx) : nullptr;
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
      reinterpret_cast<const float*>(ctx.Input("Input")->data<T>()),
      reinterpret_cast<const float*>(ctx.Input("Filter")->data<T>()),
      reinterpret_cast<float*>(output->data<T>()),
      bias != nullptr ? reinterpret_cast<const float*>(bias->data<T>())
                      : nullptr,
      conv->constant_filter,
      residual != nullptr ? reinterpret_cast<const float*>(residual->data<T>())
                          : nullptr);
  if (!ran) return Internal(ctx.op().Label() + ": oneDNN declined NHWC");
  return Status::Ok();
}

// What a channels-last conv2d_grad keeps between runs: the oneDNN terms
// derived for the dims it last saw, and whether oneDNN takes them.
struct NhwcConvGrad : cpu::DnnlConv {
  bool known = false;
  cpu::DnnlConvMode mode = cpu::DnnlConvMode::kNever;
  Dims input, filter, dout;
  bool data = false, weights = false;  // Input@GRAD, Filter@GRAD wanted
  bool supported = false;
  cpu::DnnlConvParams params;
};

// Whether `st` was derived for these tensors, outputs and mode.
bool DerivedFor(const NhwcConvGrad& st, cpu::DnnlConvMode mode,
                const Tensor& input, const Tensor& filter, const Tensor& dout,
                bool data, bool weights) {
  return st.known && st.mode == mode && st.input == input.dims() &&
         st.filter == filter.dims() && st.dout == dout.dims() &&
         st.data == data && st.weights == weights;
}

// A channels-last conv2d_grad's state with its terms for this run's dims;
// null where oneDNN cannot run it on the NHWC tensors (the op then runs on
// its NCHW view, kernels/channels_last.h).
NhwcConvGrad* NativeNhwcGrad(KernelContext& ctx) {
  const cpu::DnnlConvMode mode = cpu::GetDnnlConvMode();
  if (!cpu::DnnlAvailable() || mode == cpu::DnnlConvMode::kNever) {
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
    st->supported = DnnlParams<float>(s, &st->params);
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
template <typename T>
Status Conv2dGradNhwc(KernelContext& ctx) {
  NhwcConvGrad* conv =
      std::is_same<T, float>::value ? NativeNhwcGrad(ctx) : nullptr;
  if (conv == nullptr) {
    return Internal(ctx.op().Label() +
                    ": a channels-last conv2d_grad reached its kernel without "
                    "its NCHW view");
  }
  auto f32 = [](const Tensor* t) {
    return reinterpret_cast<const float*>(t->data<T>());
  };
  const Tensor* dout = ctx.Input("Output@GRAD");
  if (Tensor* dfilter = ctx.Output("Filter@GRAD")) {
    if (!conv->BackwardWeights(conv->params, f32(ctx.Input("Input")), f32(dout),
                               reinterpret_cast<float*>(dfilter->data<T>()))) {
      return Internal(ctx.op().Label() + ": oneDNN declined NHWC");
    }
  }
  if (Tensor* dinput = ctx.Output("Input@GRAD")) {
    if (!conv->BackwardData(conv->params, f32(ctx.Input("Filter")), f32(dout),
                            reinterpret_cast<float*>(dinput->data<T>()))) {
      return Internal(ctx.op().Label() + ": oneDNN declined NHWC");
    }
  }
  if (Tensor* dbias = ctx.Output("Bias@GRAD")) {
    T* db = dbias->data<T>();
    const int64_t m = dout->dims()[3], pixels = dout->numel() / m;
    std::fill_n(db, dbias->numel(), T(0));
    for (int64_t i = 0; i < pixels; ++i) {
      const T* g = dout->data<T>() + i * m;
      for (int64_t k = 0; k < m; ++k) db[k] += g[k];
    }
  }
  return Status::Ok();
}

template <typename T>
Status Conv2dKernel(KernelContext& ctx) {
  if (IsChannelsLast(ctx)) return Conv2dNhwc<T>(ctx);
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
  if (IsChannelsLast(ctx)) return Conv2dGradNhwc<T>(ctx);
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
  RegisterNativeChannelsLast("conv2d", &NativeChannelsLastConv);
  RegisterNativeChannelsLast("depthwise_conv2d", &NativeChannelsLastConv);
  PAREX_CPU_KERNEL(r, "depthwise_conv2d_grad", Conv2dGradKernel, float, double);
  RegisterNativeChannelsLast("conv2d_grad", &NativeChannelsLastConvGrad);
  RegisterNativeChannelsLast("depthwise_conv2d_grad",
                             &NativeChannelsLastConvGrad);
  // conv3d: the same kernels over volumes (vol2col; never oneDNN).
  PAREX_CPU_KERNEL(r, "conv3d", Conv2dKernel, float, double);
  PAREX_CPU_KERNEL(r, "conv3d_grad", Conv2dGradKernel, float, double);
}

}  // namespace parex
