// dropout and dropout_grad on CUDA with the CPU kernels' semantics
// (kernels/cpu/dropout_kernel.cc). A training-mode mask is drawn on the
// host by the CPU kernel's own generator (kernels/dropout_mask.h), from the
// same NextSeed of the op's context, so a GPU run drops the elements a CPU
// run drops; it goes through a pinned staging buffer the op keeps
// (AllocateHostStaging), is copied onto the stream, and one launch applies
// it. The staging buffer is rewritten only on the op's next run, after the
// executor synchronised the step that read it; freeing it (cudaFreeHost)
// waits for the device.
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_launchers.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/train_launchers.h"
#include "kernels/dropout_mask.h"

namespace parex {
namespace {

struct MaskStaging : KernelState {
  ~MaskStaging() override {
    if (owner != nullptr) owner->FreeHostStaging(data);
  }
  DeviceContext* owner = nullptr;
  uint8_t* data = nullptr;
  int64_t size = 0;
};

Status DropoutAttrs(const KernelContext& ctx, float* p, bool* upscale,
                    bool* is_test) {
  PAREX_ASSIGN_OR_RETURN(*p, AttrOr<float>(ctx, "dropout_prob", 0.5f));
  PAREX_ASSIGN_OR_RETURN(
      std::string impl,
      AttrOr<std::string>(ctx, "dropout_implementation", "downgrade_in_infer"));
  *upscale = impl == "upscale_in_train";
  PAREX_ASSIGN_OR_RETURN(*is_test, AttrOr<bool>(ctx, "is_test", false));
  return Status::Ok();
}

template <typename T>
Status DropoutKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  float p = 0;
  bool upscale = false, is_test = false;
  PAREX_RETURN_IF_ERROR(DropoutAttrs(ctx, &p, &upscale, &is_test));
  const int64_t n = x->numel();
  PAREX_ASSIGN_OR_RETURN(Tensor * out,
                         CudaOutput(ctx, "Out", DTypeOf<T>(), x->dims()));
  Tensor* mask = nullptr;
  if (ctx.Output("Mask") != nullptr) {
    PAREX_ASSIGN_OR_RETURN(mask,
                           CudaOutput(ctx, "Mask", DType::kUInt8, x->dims()));
  }
  if (is_test) {
    const T factor = upscale ? T(1) : static_cast<T>(1.0f - p);
    PAREX_CUDA_RETURN_IF_ERROR(LaunchScale<T>(x->data<T>(), out->data<T>(), n,
                                              factor, T(0), true, nullptr,
                                              cuda->stream()));
    if (mask != nullptr && n > 0) {
      PAREX_CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(mask->raw_data(), 1, n, cuda->stream()));
    }
    return Status::Ok();
  }
  if (mask == nullptr) {
    return ctx.Error("training-mode dropout needs the Mask output");
  }
  if (p >= 1.0f) {
    if (n > 0) {
      PAREX_CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(out->raw_data(), 0, out->bytes(), cuda->stream()));
      PAREX_CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(mask->raw_data(), 0, n, cuda->stream()));
    }
    return Status::Ok();
  }
  PAREX_ASSIGN_OR_RETURN(int64_t op_seed, DropoutOpSeed(ctx));
  MaskStaging* staging = ctx.State<MaskStaging>();
  if (staging->size < n) {
    if (staging->owner != nullptr)
      staging->owner->FreeHostStaging(staging->data);
    staging->owner = cuda;
    staging->data = static_cast<uint8_t*>(cuda->AllocateHostStaging(n));
    staging->size = staging->data != nullptr ? n : 0;
    if (staging->data == nullptr) {
      return ResourceExhausted(ctx.op().Label() + ": no pinned memory for a " +
                               std::to_string(n) + "-byte mask");
    }
  }
  DrawDropoutMask(ctx.device_context()->NextSeed(op_seed), p, n, staging->data);
  PAREX_RETURN_IF_ERROR(cuda->CopyFromHost(mask->raw_data(), staging->data, n));
  const T keep = upscale ? static_cast<T>(1.0f - p) : T(1);
  PAREX_CUDA_RETURN_IF_ERROR(LaunchDropoutApply<T>(
      x->data<T>(), static_cast<const uint8_t*>(mask->raw_data()), keep,
      out->data<T>(), n, cuda->stream()));
  return Status::Ok();
}

template <typename T>
Status DropoutGradKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* dout,
                         CudaInput(ctx, "Out@GRAD", DTypeOf<T>()));
  float p = 0;
  bool upscale = false, is_test = false;
  PAREX_RETURN_IF_ERROR(DropoutAttrs(ctx, &p, &upscale, &is_test));
  const int64_t n = dout->numel();
  PAREX_ASSIGN_OR_RETURN(Tensor * dx,
                         CudaOutput(ctx, "X@GRAD", DTypeOf<T>(), dout->dims()));
  if (is_test) {
    const T factor = upscale ? T(1) : static_cast<T>(1.0f - p);
    PAREX_CUDA_RETURN_IF_ERROR(LaunchScale<T>(dout->data<T>(), dx->data<T>(), n,
                                              factor, T(0), true, nullptr,
                                              cuda->stream()));
    return Status::Ok();
  }
  PAREX_ASSIGN_OR_RETURN(const Tensor* mask,
                         CudaInput(ctx, "Mask", DType::kUInt8));
  if (mask->numel() != n) {
    return ctx.Error("Mask " + DimsToString(mask->dims()) +
                     " does not match Out@GRAD " + DimsToString(dout->dims()));
  }
  if (upscale && p >= 1.0f) {
    if (n > 0) {
      PAREX_CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(dx->raw_data(), 0, dx->bytes(), cuda->stream()));
    }
    return Status::Ok();
  }
  const T keep = upscale ? static_cast<T>(1.0f - p) : T(1);
  PAREX_CUDA_RETURN_IF_ERROR(LaunchDropoutApply<T>(
      dout->data<T>(), static_cast<const uint8_t*>(mask->raw_data()), keep,
      dx->data<T>(), n, cuda->stream()));
  return Status::Ok();
}

}  // namespace

void RegisterCudaDropoutKernels(KernelRegistry* r) {
  PAREX_CUDA_KERNEL(r, "dropout", DropoutKernel, float, double);
  PAREX_CUDA_KERNEL(r, "dropout_grad", DropoutGradKernel, float, double);
}

}  // namespace parex
