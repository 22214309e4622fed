// pool2d and pool2d_grad on CUDA (NCHW), max and avg, with the CPU kernel's
// window rules (kernels/cpu/spatial/pool2d_kernel.cc): paddings, SAME /
// VALID, exclusive averages, global_pooling, adaptive windows and ceil_mode
// (which only changes the output extent shape inference gives Out). The
// device kernels are in pool_launchers.cu (spatial_launchers.h).
#include <string>
#include <vector>

#include "kernels/cpu/spatial/im2col.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/spatial_launchers.h"

namespace parex {
namespace {

// The windows of X -> an output of `out` dims, resolved as the CPU kernel's
// GetPoolShape resolves them.
StatusOr<PoolArgs> PoolArgsOf(const KernelContext& ctx, const Dims& x,
                              const Dims& out) {
  PAREX_ASSIGN_OR_RETURN(std::string format,
                         AttrOr<std::string>(ctx, "data_format", "NCHW"));
  if (format != "NCHW" && format != "AnyLayout") {
    return Unimplemented(ctx.op().Label() + ": data_format '" + format +
                         "' on CUDA (only NCHW is implemented)");
  }
  if (x.size() != 4 || out.size() != 4 || out[0] != x[0] || out[1] != x[1]) {
    return ctx.Error("X " + DimsToString(x) + " and Out " + DimsToString(out) +
                     " must be [N, C, H, W] with the same N and C");
  }
  PAREX_ASSIGN_OR_RETURN(std::string type,
                         AttrOr<std::string>(ctx, "pooling_type", "max"));
  if (type != "max" && type != "avg") {
    return ctx.Error("pooling_type must be 'max' or 'avg', got '" + type + "'");
  }
  PoolArgs a;
  a.planes = x[0] * x[1];
  a.max = type == "max";
  PAREX_ASSIGN_OR_RETURN(a.exclusive, AttrOr<bool>(ctx, "exclusive", true));
  PAREX_ASSIGN_OR_RETURN(a.adaptive, AttrOr<bool>(ctx, "adaptive", false));
  PAREX_ASSIGN_OR_RETURN(bool global,
                         AttrOr<bool>(ctx, "global_pooling", false));
  PAREX_ASSIGN_OR_RETURN(std::vector<int> ksize,
                         AttrOr<std::vector<int>>(ctx, "ksize", {}));
  if (ksize.size() != 2) {
    return ctx.Error("ksize must have 2 entries, got " +
                     std::to_string(ksize.size()));
  }
  cpu::WindowDim dims[2];
  for (int i = 0; i < 2; ++i) {
    dims[i].in = x[2 + i];
    dims[i].out = out[2 + i];
    dims[i].size = ksize[i];
  }
  if (global) {
    for (cpu::WindowDim& d : dims) d.size = d.in;  // stride 1, no padding
  } else if (!a.adaptive) {
    PAREX_ASSIGN_OR_RETURN(std::vector<int> strides,
                           AttrOr<std::vector<int>>(ctx, "strides", {1, 1}));
    PAREX_ASSIGN_OR_RETURN(std::vector<int> paddings,
                           AttrOr<std::vector<int>>(ctx, "paddings", {0, 0}));
    PAREX_ASSIGN_OR_RETURN(
        std::string algorithm,
        AttrOr<std::string>(ctx, "padding_algorithm", "EXPLICIT"));
    if (strides.size() != 2 || (paddings.size() != 2 && paddings.size() != 4)) {
      return ctx.Error("strides must have 2 entries and paddings 2 or 4");
    }
    cpu::ResolveWindows(algorithm, strides, nullptr, paddings, dims);
    for (const cpu::WindowDim& d : dims) {
      if (d.stride < 1 || d.pad_before < 0) {
        return ctx.Error("strides must be positive and paddings not negative");
      }
    }
  }
  PoolDim* mine[2] = {&a.h, &a.w};
  for (int i = 0; i < 2; ++i) {
    mine[i]->in = dims[i].in;
    mine[i]->out = dims[i].out;
    mine[i]->size = dims[i].size;
    mine[i]->stride = dims[i].stride;
    mine[i]->pad_before = dims[i].pad_before;
  }
  return a;
}

template <typename T>
Status Pool2dKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  Tensor* out_t = ctx.Output("Out");
  if (out_t == nullptr || !out_t->defined()) {
    return ctx.Error("output 'Out' was not shaped by inference");
  }
  PAREX_ASSIGN_OR_RETURN(PoolArgs args,
                         PoolArgsOf(ctx, x->dims(), out_t->dims()));
  PAREX_ASSIGN_OR_RETURN(Tensor * out,
                         CudaOutput(ctx, "Out", DTypeOf<T>(), out_t->dims()));
  PAREX_CUDA_RETURN_IF_ERROR(
      LaunchPool2d<T>(args, x->data<T>(), out->data<T>(), cuda->stream()));
  return Status::Ok();
}

template <typename T>
Status Pool2dGradKernel(KernelContext& ctx) {
  if (ctx.Output("X@GRAD") == nullptr) return Status::Ok();
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* out,
                         CudaInput(ctx, "Out", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* dout,
                         CudaInput(ctx, "Out@GRAD", DTypeOf<T>()));
  if (dout->dims() != out->dims()) {
    return ctx.Error("Out@GRAD " + DimsToString(dout->dims()) +
                     " does not match Out " + DimsToString(out->dims()));
  }
  PAREX_ASSIGN_OR_RETURN(PoolArgs args,
                         PoolArgsOf(ctx, x->dims(), out->dims()));
  PAREX_ASSIGN_OR_RETURN(Tensor * dx,
                         CudaOutput(ctx, "X@GRAD", DTypeOf<T>(), x->dims()));
  PAREX_CUDA_RETURN_IF_ERROR(
      LaunchPool2dGrad<T>(args, x->data<T>(), out->data<T>(), dout->data<T>(),
                          dx->data<T>(), cuda->stream()));
  return Status::Ok();
}

}  // namespace

void RegisterCudaPoolKernels(KernelRegistry* r) {
  PAREX_CUDA_KERNEL(r, "pool2d", Pool2dKernel, float, double);
  PAREX_CUDA_KERNEL(r, "pool2d_grad", Pool2dGradKernel, float, double);
}

}  // namespace parex
