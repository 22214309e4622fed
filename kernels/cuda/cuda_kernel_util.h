// What every CUDA op kernel does before it launches: find its
// CudaDeviceContext, check that its tensors are on that context's place with
// the kernel's dtype, and read optional attributes. Also the registration
// helper for kernels templated on the element type.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "base/status.h"
#include "kernels/cuda/cuda_device_context.h"
#include "kernels/kernel_context.h"
#include "kernels/kernel_registry.h"

namespace parex {

// The kernel's CudaDeviceContext, made current on the calling thread; an
// error when the op runs on another kind of context.
StatusOr<CudaDeviceContext*> CudaContextOf(const KernelContext& ctx);

// A device buffer a kernel keeps in its state (workspaces, scratch): the
// data of *buffer, first grown to at least `bytes` on `place` (or moved
// there), so steady steps allocate nothing. Null for 0 bytes.
StatusOr<void*> KeptDeviceBuffer(Tensor* buffer, const Place& place,
                                 size_t bytes);

// Input `slot`[i] as a tensor on the context's device (SameMemory: a slot
// of the same GPU counts) with `dtype`, holding
// data (or no elements). Errors name the slot and variable.
StatusOr<const Tensor*> CudaInput(const KernelContext& ctx,
                                  std::string_view slot, DType dtype,
                                  int i = 0);

// Output `slot`[i], on the context's place with `dtype` and `dims`' element
// count. Shape inference has normally allocated it (its dims are kept); an
// output no inference shaped is allocated to `dims` here. Disagreement with
// what inference allocated is an error naming both shapes.
StatusOr<Tensor*> CudaOutput(const KernelContext& ctx, std::string_view slot,
                             DType dtype, const Dims& dims, int i = 0);

// A gradient kernel's inputs Out and Out@GRAD (CudaInput), of one element
// count; an error naming both shapes otherwise.
template <typename T>
StatusOr<std::pair<const Tensor*, const Tensor*>> CudaOutAndGrad(
    const KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(const Tensor* out,
                         CudaInput(ctx, "Out", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* dout,
                         CudaInput(ctx, "Out@GRAD", DTypeOf<T>()));
  if (dout->numel() != out->numel()) {
    return ctx.Error("Out@GRAD " + DimsToString(dout->dims()) +
                     " does not match Out " + DimsToString(out->dims()));
  }
  return std::make_pair(out, dout);
}

// The data of gradient output `slot` with `dims` (CudaOutput), or nullptr
// when the op does not want that gradient.
template <typename T>
StatusOr<T*> CudaGradOutput(const KernelContext& ctx, const char* slot,
                            const Dims& dims) {
  if (ctx.Output(slot) == nullptr) return static_cast<T*>(nullptr);
  PAREX_ASSIGN_OR_RETURN(Tensor * t, CudaOutput(ctx, slot, DTypeOf<T>(), dims));
  return t->data<T>();
}

// The attribute when the op stores it (an error if it has the wrong type),
// else the schema's default, else `fluid_default` (for attributes a schema
// may leave out).
template <typename T>
StatusOr<T> AttrOr(const KernelContext& ctx, std::string_view name,
                   T fluid_default) {
  StatusOr<T> value = ctx.op().GetAttr<T>(name);
  if (value.ok() || ctx.op().HasAttr(name)) return value;
  return fluid_default;
}

// Registers make(TypeTag<T>{}) on CUDA for each T.
template <typename... Ts, typename Make>
void RegisterCudaKernel(KernelRegistry* registry, const std::string& op,
                        Make make) {
  (registry->Register({op, Place::Kind::kCUDA, DTypeOf<Ts>()},
                      make(TypeTag<Ts>{})),
   ...);
}

// PAREX_CUDA_KERNEL(registry, "relu", ReluKernel, float, double) registers
// ReluKernel<float> and ReluKernel<double> for CUDA places.
#define PAREX_CUDA_KERNEL(registry, op, kernel, ...)                    \
  ::parex::RegisterCudaKernel<__VA_ARGS__>(registry, op, [](auto tag) { \
    return &kernel<typename decltype(tag)::type>;                       \
  })

}  // namespace parex
