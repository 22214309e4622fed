#include "kernels/cuda/cuda_kernel_util.h"

namespace parex {
namespace {

std::string SlotName(const KernelContext& ctx, std::string_view slot, int i,
                     bool input) {
  const std::vector<std::string> args =
      input ? ctx.op().Input(slot) : ctx.op().Output(slot);
  std::string name = (input ? "input '" : "output '") + std::string(slot) + "'";
  if (i < static_cast<int>(args.size())) name += " ('" + args[i] + "')";
  return name;
}

}  // namespace

StatusOr<void*> KeptDeviceBuffer(Tensor* buffer, const Place& place,
                                 size_t bytes) {
  if (bytes == 0) return nullptr;
  if (!buffer->defined() || static_cast<size_t>(buffer->bytes()) < bytes ||
      buffer->place() != place) {
    Tensor grown;
    PAREX_RETURN_IF_ERROR(
        grown.TryAllocate(DType::kUInt8, {static_cast<int64_t>(bytes)}, place));
    *buffer = std::move(grown);
  }
  return buffer->raw_data();
}

StatusOr<CudaDeviceContext*> CudaContextOf(const KernelContext& ctx) {
  auto* cuda = dynamic_cast<CudaDeviceContext*>(ctx.device_context());
  if (cuda == nullptr) {
    return ctx.Error("CUDA kernel run on a " + ctx.place().ToString() +
                     " context; it needs a CudaDeviceContext");
  }
  PAREX_RETURN_IF_ERROR(cuda->Activate());
  return cuda;
}

StatusOr<const Tensor*> CudaInput(const KernelContext& ctx,
                                  std::string_view slot, DType dtype, int i) {
  const Tensor* t = ctx.Input(slot, i);
  if (t == nullptr) {
    return ctx.Error(SlotName(ctx, slot, i, true) + " holds no tensor");
  }
  if (t->dtype() != dtype) {
    return ctx.Error(SlotName(ctx, slot, i, true) + " is " + t->DebugString() +
                     ", the kernel computes in " + DTypeName(dtype));
  }
  if (t->numel() > 0 &&
      (!SameMemory(t->place(), ctx.place()) || !t->initialized())) {
    return ctx.Error(SlotName(ctx, slot, i, true) + " is " + t->DebugString() +
                     ", not data on " + ctx.place().ToString());
  }
  return t;
}

StatusOr<Tensor*> CudaOutput(const KernelContext& ctx, std::string_view slot,
                             DType dtype, const Dims& dims, int i) {
  Tensor* t = ctx.Output(slot, i);
  if (t == nullptr) {
    return ctx.Error(SlotName(ctx, slot, i, false) + " is not bound");
  }
  if (!t->defined()) {
    if (Status s = t->TryAllocate(dtype, dims, ctx.place()); !s.ok()) {
      return ctx.Error(SlotName(ctx, slot, i, false) + ": " + s.message());
    }
    return t;
  }
  if (t->dtype() != dtype || !SameMemory(t->place(), ctx.place()) ||
      !t->initialized()) {
    return ctx.Error(SlotName(ctx, slot, i, false) + " was allocated as " +
                     t->DebugString() + ", the kernel writes " +
                     DTypeName(dtype) + " on " + ctx.place().ToString());
  }
  if (t->numel() != Numel(dims)) {
    return ctx.Error(SlotName(ctx, slot, i, false) + " was allocated as " +
                     DimsToString(t->dims()) + " but the kernel computes " +
                     DimsToString(dims));
  }
  return t;
}

}  // namespace parex
