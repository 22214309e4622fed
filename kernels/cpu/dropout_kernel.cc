// dropout and dropout_grad on CPU. Semantics: graph/ir/ops/norm_ops.cc.
//
// Randomness: the mask of one run is DrawDropoutMask's (kernels/
// dropout_mask.h, shared with the CUDA kernel) from DeviceContext::
// NextSeed(s), s being the Seed input's value when given, else `seed` when
// fix_seed, else 0 (a fresh draw from the context's generator, so masks
// differ from step to step but repeat for a run that starts from the same
// PAREX_SEED).
#include <algorithm>
#include <cstdint>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/dropout_mask.h"

namespace parex {
namespace {

bool UpscaleInTrain(const KernelContext& ctx) {
  return ctx.Attr<std::string>("dropout_implementation") == "upscale_in_train";
}

template <typename T>
Status DropoutKernel(KernelContext& ctx) {
  const Tensor& x_t = *ctx.Input("X");
  const T* x = x_t.data<T>();
  T* out = ctx.Output("Out")->data<T>();
  const int64_t n = x_t.numel();
  const float p = ctx.Attr<float>("dropout_prob");
  const bool upscale = UpscaleInTrain(ctx);
  if (ctx.Attr<bool>("is_test")) {
    const T factor = upscale ? T(1) : static_cast<T>(1.0f - p);
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * factor;
    // Every element kept (a bound Mask is read by nothing in test mode, but
    // it then holds a value, as Paddle's training programs expect).
    if (Tensor* mask_t = ctx.Output("Mask")) {
      std::fill_n(mask_t->data<uint8_t>(), n, uint8_t{1});
    }
    return Status::Ok();
  }
  Tensor* mask_t = ctx.Output("Mask");
  if (mask_t == nullptr) {
    return ctx.Error("training-mode dropout needs the Mask output");
  }
  uint8_t* mask = mask_t->data<uint8_t>();
  if (p >= 1.0f) {
    std::fill_n(out, n, T(0));
    std::fill_n(mask, n, uint8_t{0});
    return Status::Ok();
  }
  PAREX_ASSIGN_OR_RETURN(int64_t op_seed, DropoutOpSeed(ctx));
  DrawDropoutMask(ctx.device_context()->NextSeed(op_seed), p, n, mask);
  // Kept values are divided by (1 - p) as Fluid does, not multiplied by its
  // inverse, so fp32 results match Fluid's bit for bit.
  const T keep = upscale ? static_cast<T>(1.0f - p) : T(1);
  for (int64_t i = 0; i < n; ++i) out[i] = mask[i] ? x[i] / keep : T(0);
  return Status::Ok();
}

template <typename T>
Status DropoutGradKernel(KernelContext& ctx) {
  const Tensor& dout_t = *ctx.Input("Out@GRAD");
  const T* dout = dout_t.data<T>();
  T* dx = ctx.Output("X@GRAD")->data<T>();
  const int64_t n = dout_t.numel();
  const float p = ctx.Attr<float>("dropout_prob");
  const bool upscale = UpscaleInTrain(ctx);
  if (ctx.Attr<bool>("is_test")) {
    const T factor = upscale ? T(1) : static_cast<T>(1.0f - p);
    for (int64_t i = 0; i < n; ++i) dx[i] = dout[i] * factor;
    return Status::Ok();
  }
  const uint8_t* mask = ctx.Input("Mask")->data<uint8_t>();
  if (upscale && p >= 1.0f) {
    std::fill_n(dx, n, T(0));
    return Status::Ok();
  }
  const T keep = upscale ? static_cast<T>(1.0f - p) : T(1);
  for (int64_t i = 0; i < n; ++i) dx[i] = mask[i] ? dout[i] / keep : T(0);
  return Status::Ok();
}

}  // namespace

void RegisterDropoutKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "dropout", DropoutKernel, float, double);
  PAREX_CPU_KERNEL(r, "dropout_grad", DropoutGradKernel, float, double);
}

}  // namespace parex
