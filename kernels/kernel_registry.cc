#include "kernels/kernel_registry.h"

#include <mutex>

namespace parex {

std::string KernelKey::ToString() const {
  return "'" + op_type + "' on " + PlaceKindName(place_kind) + " for " +
         (dtype == DType::kUndefined ? std::string("any dtype")
                                     : std::string(DTypeName(dtype)));
}

KernelRegistry& KernelRegistry::Global() {
  static KernelRegistry* registry = [] {
    auto* r = new KernelRegistry();
    RegisterCpuKernels(r);
    return r;
  }();
  return *registry;
}

void KernelRegistry::Register(const KernelKey& key, KernelFn fn) {
  std::unique_lock lock(mu_);
  kernels_[key] = fn;
}

StatusOr<KernelFn> KernelRegistry::Find(const KernelKey& key) const {
  std::shared_lock lock(mu_);
  auto it = kernels_.find(key);
  if (it != kernels_.end()) return it->second;
  // A dtype-agnostic kernel serves every dtype.
  it = kernels_.find(KernelKey{key.op_type, key.place_kind, DType::kUndefined});
  if (it != kernels_.end()) return it->second;
  return NotFound("no kernel for op " + key.ToString());
}

bool KernelRegistry::Has(const KernelKey& key) const { return Find(key).ok(); }

std::vector<KernelKey> KernelRegistry::Keys() const {
  std::shared_lock lock(mu_);
  std::vector<KernelKey> keys;
  for (const auto& [key, fn] : kernels_) keys.push_back(key);
  return keys;
}

}  // namespace parex
