// scale on CUDA (Fluid): Out = scale * X + bias, or scale * (X + bias) when
// bias_after_scale is false. An optional one-element fp32 ScaleTensor
// replaces the `scale` attribute; on the device it is read by the kernel, so
// no synchronisation is needed.
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_launchers.h"
#include "kernels/cuda/cuda_status.h"

namespace parex {
namespace {

template <typename T>
Status ScaleKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(float scale, AttrOr<float>(ctx, "scale", 1.0f));
  PAREX_ASSIGN_OR_RETURN(float bias, AttrOr<float>(ctx, "bias", 0.0f));
  PAREX_ASSIGN_OR_RETURN(bool bias_after_scale,
                         AttrOr<bool>(ctx, "bias_after_scale", true));
  const float* scale_on_device = nullptr;
  if (const Tensor* s = ctx.Input("ScaleTensor"); s != nullptr) {
    if (s->dtype() != DType::kFP32 || s->numel() != 1) {
      return ctx.Error("ScaleTensor must be one fp32 element, got " +
                       s->DebugString());
    }
    if (s->place().is_cpu()) {
      scale = *s->data<float>();
    } else if (s->place() == ctx.place()) {
      scale_on_device = s->data<float>();
    } else {
      return ctx.Error("ScaleTensor is " + s->DebugString() + ", not on " +
                       ctx.place().ToString());
    }
  }
  PAREX_ASSIGN_OR_RETURN(Tensor * out,
                         CudaOutput(ctx, "Out", DTypeOf<T>(), x->dims()));
  PAREX_CUDA_RETURN_IF_ERROR(LaunchScale<T>(
      x->data<T>(), out->data<T>(), x->numel(), static_cast<T>(scale),
      static_cast<T>(bias), bias_after_scale, scale_on_device, cuda->stream()));
  return Status::Ok();
}

}  // namespace

void RegisterCudaFillKernels(KernelRegistry* r) {
  PAREX_CUDA_KERNEL(r, "scale", ScaleKernel, float, double);
}

}  // namespace parex
