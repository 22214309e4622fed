// The kernel registry: (op type, place kind, dtype) -> kernel function.
// CPU kernels are registered on first use of Global(); the CUDA library adds
// its own with RegisterCudaKernels (kernels/cuda/cuda_kernels.h).
// Thread-safety: Register and Find may be called concurrently.
#pragma once

#include <map>
#include <shared_mutex>
#include <string>
#include <tuple>
#include <vector>

#include "base/dtype.h"
#include "base/place.h"
#include "base/status.h"
#include "kernels/kernel_context.h"

namespace parex {

using KernelFn = Status (*)(KernelContext&);

struct KernelKey {
  std::string op_type;
  Place::Kind place_kind;
  DType dtype;  // kUndefined for ops whose kernel takes every dtype

  std::string ToString() const;  // "mul on cpu for fp32"
  friend bool operator<(const KernelKey& a, const KernelKey& b) {
    return std::tie(a.op_type, a.place_kind, a.dtype) <
           std::tie(b.op_type, b.place_kind, b.dtype);
  }
};

class KernelRegistry {
 public:
  static KernelRegistry& Global();

  void Register(const KernelKey& key, KernelFn fn);
  // NotFound naming op type, place kind and dtype when nothing is registered.
  StatusOr<KernelFn> Find(const KernelKey& key) const;
  bool Has(const KernelKey& key) const;
  std::vector<KernelKey> Keys() const;

 private:
  mutable std::shared_mutex mu_;
  std::map<KernelKey, KernelFn> kernels_;
};

template <typename T>
struct TypeTag {
  using type = T;
};

// Registers make(TypeTag<T>{}) for each T on CPU.
template <typename... Ts, typename Make>
void RegisterCpuKernel(KernelRegistry* registry, const std::string& op,
                       Make make) {
  (registry->Register({op, Place::Kind::kCPU, DTypeOf<Ts>()},
                      make(TypeTag<Ts>{})),
   ...);
}

// PAREX_CPU_KERNEL(registry, "relu", ReluKernel, float, double) registers
// ReluKernel<float> and ReluKernel<double>.
#define PAREX_CPU_KERNEL(registry, op, kernel, ...)                    \
  ::parex::RegisterCpuKernel<__VA_ARGS__>(registry, op, [](auto tag) { \
    return &kernel<typename decltype(tag)::type>;                      \
  })

// Appends every CPU kernel of kernels/cpu/ (defined there).
void RegisterCpuKernels(KernelRegistry* registry);

}  // namespace parex
