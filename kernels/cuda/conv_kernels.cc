// conv2d and conv2d_grad on CUDA (NCHW), also serving depthwise_conv2d and
// its gradient (a grouped conv2d), through cuDNN (cudnn_conv.h) with the CPU
// kernel's attribute semantics (kernels/cpu/spatial/conv2d_kernel.cc): the
// windows are resolved by the same cpu::ResolveWindows (SAME, VALID,
// symmetric or asymmetric paddings; SAME sets dilations to 1). cuDNN pads
// symmetrically, so asymmetric paddings are made explicit: the input is
// copied into a zero-padded buffer and convolved without padding, and the
// input gradient computed there is cropped back. With one group the
// gradients are GEMMs over im2col columns instead (conv_gemm_grad.h: faster
// than cuDNN's exact deterministic algorithms). The fused forms' Bias and
// ResidualData are added after the convolution, Bias@GRAD summed per
// channel. NHWC is refused (as shape inference refuses it).
#include <cuda_runtime_api.h>

#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu/spatial/im2col.h"
#include "kernels/cuda/conv_gemm_grad.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/cudnn_conv.h"
#include "kernels/cuda/spatial_launchers.h"

namespace parex {
namespace {

using cpu::WindowDim;

struct ConvGeometry {
  int64_t n = 0, c = 0, m = 0, groups = 1, kh = 0, kw = 0;
  WindowDim h, w;

  Dims OutDims() const { return {n, m, h.out, w.out}; }
  // Nothing to sum: the output is zero and so are the gradients.
  bool Empty() const {
    return n == 0 || c / groups == 0 || m / groups == 0 || kh * kw == 0 ||
           h.out * w.out == 0;
  }
  bool Symmetric() const {
    return h.pad_before == h.pad_after && w.pad_before == w.pad_after;
  }
  int64_t PaddedH() const { return h.in + h.pad_before + h.pad_after; }
  int64_t PaddedW() const { return w.in + w.pad_before + w.pad_after; }
  int64_t PaddedNumel() const { return n * c * PaddedH() * PaddedW(); }

  // The im2col geometry of one sample (one group; any padding: im2col
  // reads zeros past either end).
  Im2ColShape ForGemm() const {
    Im2ColShape s;
    s.c = c;
    s.h = h.in;
    s.w = w.in;
    s.kh = kh;
    s.kw = kw;
    s.oh = h.out;
    s.ow = w.out;
    s.pad_h = h.pad_before;
    s.pad_w = w.pad_before;
    s.stride_h = h.stride;
    s.stride_w = w.stride;
    s.dilation_h = h.dilation;
    s.dilation_w = w.dilation;
    return s;
  }

  // What cuDNN convolves: the input itself with symmetric paddings, or the
  // explicitly padded input without.
  CudnnConvShape ForCudnn(bool is_double) const {
    CudnnConvShape s;
    s.is_double = is_double;
    s.n = n;
    s.c = c;
    s.m = m;
    s.kh = kh;
    s.kw = kw;
    s.groups = groups;
    s.oh = h.out;
    s.ow = w.out;
    s.stride_h = h.stride;
    s.stride_w = w.stride;
    s.dilation_h = h.dilation;
    s.dilation_w = w.dilation;
    if (Symmetric()) {
      s.h = h.in;
      s.w = w.in;
      s.pad_h = h.pad_before;
      s.pad_w = w.pad_before;
    } else {
      s.h = PaddedH();
      s.w = PaddedW();
    }
    return s;
  }
};

// The op's list attribute `name` with `want` entries (or, for paddings, 2 or
// 4).
StatusOr<std::vector<int>> IntsAttr(const KernelContext& ctx, const char* name,
                                    std::vector<int> dflt) {
  PAREX_ASSIGN_OR_RETURN(std::vector<int> v,
                         AttrOr<std::vector<int>>(ctx, name, dflt));
  const bool paddings = std::string(name) == "paddings";
  if (v.size() == 2 || (paddings && v.size() == 4)) return v;
  return ctx.Error(std::string(name) + " must have 2" +
                   (paddings ? " or 4" : "") + " entries, got " +
                   std::to_string(v.size()));
}

StatusOr<ConvGeometry> GeometryOf(const KernelContext& ctx, const Dims& in,
                                  const Dims& filter) {
  PAREX_ASSIGN_OR_RETURN(std::string format,
                         AttrOr<std::string>(ctx, "data_format", "NCHW"));
  if (format != "NCHW" && format != "AnyLayout") {
    return Unimplemented(ctx.op().Label() + ": data_format '" + format +
                         "' on CUDA (only NCHW is implemented)");
  }
  if (in.size() != 4 || filter.size() != 4) {
    return ctx.Error("Input " + DimsToString(in) + " and Filter " +
                     DimsToString(filter) + " must have rank 4 (NCHW, MCHW)");
  }
  ConvGeometry g;
  PAREX_ASSIGN_OR_RETURN(int groups, AttrOr<int>(ctx, "groups", 1));
  g.groups = groups;
  g.n = in[0];
  g.c = in[1];
  g.m = filter[0];
  g.kh = filter[2];
  g.kw = filter[3];
  if (g.groups < 1 || g.c != filter[1] * g.groups || g.m % g.groups != 0) {
    return ctx.Error("Input " + DimsToString(in) + " and Filter " +
                     DimsToString(filter) + " do not agree with groups " +
                     std::to_string(g.groups));
  }
  PAREX_ASSIGN_OR_RETURN(std::vector<int> strides,
                         IntsAttr(ctx, "strides", {1, 1}));
  PAREX_ASSIGN_OR_RETURN(std::vector<int> paddings,
                         IntsAttr(ctx, "paddings", {0, 0}));
  PAREX_ASSIGN_OR_RETURN(std::vector<int> dilations,
                         IntsAttr(ctx, "dilations", {1, 1}));
  PAREX_ASSIGN_OR_RETURN(
      std::string algorithm,
      AttrOr<std::string>(ctx, "padding_algorithm", "EXPLICIT"));
  WindowDim dims[2];
  dims[0].in = in[2];
  dims[0].size = g.kh;
  dims[1].in = in[3];
  dims[1].size = g.kw;
  cpu::ResolveWindows(algorithm, strides, &dilations, paddings, dims);
  for (WindowDim& d : dims) {
    if (d.stride < 1 || d.dilation < 1 || d.pad_before < 0 || d.pad_after < 0) {
      return ctx.Error(
          "strides and dilations must be positive and paddings "
          "not negative");
    }
    const int64_t span = d.dilation * (d.size - 1) + 1;
    const int64_t room = d.in + d.pad_before + d.pad_after;
    d.out = room < span ? 0 : (room - span) / d.stride + 1;
  }
  g.h = dims[0];
  g.w = dims[1];
  return g;
}

template <typename T>
constexpr bool kIsDouble = std::is_same<T, double>::value;

template <typename T>
Status Conv2dKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* input,
                         CudaInput(ctx, "Input", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* filter,
                         CudaInput(ctx, "Filter", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(ConvGeometry g,
                         GeometryOf(ctx, input->dims(), filter->dims()));
  PAREX_ASSIGN_OR_RETURN(Tensor * output,
                         CudaOutput(ctx, "Output", DTypeOf<T>(), g.OutDims()));
  if (output->numel() == 0) return Status::Ok();
  const cudaStream_t stream = cuda->stream();
  T* y = output->data<T>();
  if (g.Empty()) {
    PAREX_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(y, 0, output->numel() * sizeof(T), stream));
  } else {
    CudnnConv* conv = ctx.State<CudnnConv>();
    const T* x = input->data<T>();
    if (!g.Symmetric()) {
      PAREX_ASSIGN_OR_RETURN(
          void* padded,
          conv->PaddedBuffer(ctx.place(), g.PaddedNumel() * sizeof(T)));
      PAREX_CUDA_RETURN_IF_ERROR(LaunchPadPlanes<T>(
          x, g.n * g.c, g.h.in, g.w.in, g.h.pad_before, g.w.pad_before,
          g.PaddedH(), g.PaddedW(), static_cast<T*>(padded), stream));
      x = static_cast<const T*>(padded);
    }
    Status s =
        conv->Forward(cuda, g.ForCudnn(kIsDouble<T>), x, filter->data<T>(), y);
    if (!s.ok()) return s.WithContext(ctx.op().Label());
  }
  // Bias and ResidualData: the fused forms Paddle files may carry. A fused
  // activation (parex's inference fusions run on CPU places only) is
  // refused rather than left out.
  if (ctx.HasAttr("fuse_activation") &&
      !ctx.Attr<std::string>("fuse_activation").empty()) {
    return ctx.Error("fuse_activation '" +
                     ctx.Attr<std::string>("fuse_activation") +
                     "' is not supported on CUDA places");
  }
  const T* bias = nullptr;
  const T* residual = nullptr;
  if (ctx.Input("Bias") != nullptr) {
    PAREX_ASSIGN_OR_RETURN(const Tensor* b,
                           CudaInput(ctx, "Bias", DTypeOf<T>()));
    if (b->numel() != g.m) {
      return ctx.Error("Bias " + DimsToString(b->dims()) +
                       " is not one value per output channel");
    }
    bias = b->data<T>();
  }
  if (ctx.Input("ResidualData") != nullptr) {
    PAREX_ASSIGN_OR_RETURN(const Tensor* r,
                           CudaInput(ctx, "ResidualData", DTypeOf<T>()));
    if (r->numel() != output->numel()) {
      return ctx.Error("ResidualData " + DimsToString(r->dims()) +
                       " does not match Output " +
                       DimsToString(output->dims()));
    }
    residual = r->data<T>();
  }
  PAREX_CUDA_RETURN_IF_ERROR(LaunchAddChannelBias<T>(
      y, bias, residual, g.n, g.m, g.h.out * g.w.out, stream));
  return Status::Ok();
}

template <typename T>
Status Conv2dGradKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* input,
                         CudaInput(ctx, "Input", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* filter,
                         CudaInput(ctx, "Filter", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* dout_t,
                         CudaInput(ctx, "Output@GRAD", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(ConvGeometry g,
                         GeometryOf(ctx, input->dims(), filter->dims()));
  if (dout_t->dims() != g.OutDims()) {
    return ctx.Error("Output@GRAD " + DimsToString(dout_t->dims()) +
                     " is not the convolution's output " +
                     DimsToString(g.OutDims()));
  }
  PAREX_ASSIGN_OR_RETURN(T * dx,
                         CudaGradOutput<T>(ctx, "Input@GRAD", input->dims()));
  PAREX_ASSIGN_OR_RETURN(T * dw,
                         CudaGradOutput<T>(ctx, "Filter@GRAD", filter->dims()));
  const Tensor* bias = ctx.Input("Bias");
  PAREX_ASSIGN_OR_RETURN(
      T * db,
      CudaGradOutput<T>(ctx, "Bias@GRAD", bias ? bias->dims() : Dims{g.m}));
  const cudaStream_t stream = cuda->stream();
  const T* dout = dout_t->data<T>();
  if (g.Empty()) {
    if (dx != nullptr) {
      PAREX_CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(dx, 0, input->numel() * sizeof(T), stream));
    }
    if (dw != nullptr) {
      PAREX_CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(dw, 0, filter->numel() * sizeof(T), stream));
    }
  } else if (g.groups == 1 && (dx != nullptr || dw != nullptr)) {
    // One group: GEMMs over im2col columns (faster than cuDNN's exact
    // deterministic algorithms, and any padding; conv_gemm_grad.h).
    CudnnConv* conv = ctx.State<CudnnConv>();
    const Im2ColShape s = g.ForGemm();
    PAREX_ASSIGN_OR_RETURN(
        void* scratch,
        conv->GemmScratch(ctx.place(),
                          ConvGemmScratchElements(s, g.n, g.m) * sizeof(T)));
    Status st =
        GemmConvGrad<T>(*cuda, s, g.n, g.m, input->data<T>(), filter->data<T>(),
                        dout, dx, dw, static_cast<T*>(scratch));
    if (!st.ok()) return st.WithContext(ctx.op().Label());
  } else if (dx != nullptr || dw != nullptr) {
    CudnnConv* conv = ctx.State<CudnnConv>();
    const CudnnConvShape shape = g.ForCudnn(kIsDouble<T>);
    Status s = Status::Ok();
    if (g.Symmetric()) {
      if (dw != nullptr) {
        s = conv->BackwardFilter(cuda, shape, input->data<T>(), dout, dw);
      }
      if (s.ok() && dx != nullptr) {
        s = conv->BackwardData(cuda, shape, filter->data<T>(), dout, dx);
      }
    } else {
      // One padded buffer serves both, in stream order: the padded input
      // for the filter gradient, then the padded input gradient.
      PAREX_ASSIGN_OR_RETURN(
          void* buffer,
          conv->PaddedBuffer(ctx.place(), g.PaddedNumel() * sizeof(T)));
      T* padded = static_cast<T*>(buffer);
      const int64_t planes = g.n * g.c;
      if (dw != nullptr) {
        PAREX_CUDA_RETURN_IF_ERROR(LaunchPadPlanes<T>(
            input->data<T>(), planes, g.h.in, g.w.in, g.h.pad_before,
            g.w.pad_before, g.PaddedH(), g.PaddedW(), padded, stream));
        s = conv->BackwardFilter(cuda, shape, padded, dout, dw);
      }
      if (s.ok() && dx != nullptr) {
        s = conv->BackwardData(cuda, shape, filter->data<T>(), dout, padded);
        if (s.ok()) {
          PAREX_CUDA_RETURN_IF_ERROR(LaunchCropPlanes<T>(
              padded, planes, g.PaddedH(), g.PaddedW(), g.h.pad_before,
              g.w.pad_before, g.h.in, g.w.in, dx, stream));
        }
      }
    }
    if (!s.ok()) return s.WithContext(ctx.op().Label());
  }
  if (db != nullptr) {
    PAREX_CUDA_RETURN_IF_ERROR(
        LaunchChannelSums<T>(dout, g.n, g.m, g.h.out * g.w.out, db, stream));
  }
  return Status::Ok();
}

}  // namespace

void RegisterCudaConvKernels(KernelRegistry* r) {
  PAREX_CUDA_KERNEL(r, "conv2d", Conv2dKernel, float, double);
  PAREX_CUDA_KERNEL(r, "conv2d_grad", Conv2dGradKernel, float, double);
  // depthwise_conv2d: a grouped conv2d (no Bias / ResidualData slots).
  PAREX_CUDA_KERNEL(r, "depthwise_conv2d", Conv2dKernel, float, double);
  PAREX_CUDA_KERNEL(r, "depthwise_conv2d_grad", Conv2dGradKernel, float,
                    double);
}

}  // namespace parex
