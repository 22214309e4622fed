#include "kernels/allocator.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "base/check.h"
#include "base/config.h"

namespace parex {
namespace {

// Rounds a request up to a size class: multiples of 64 bytes up to 4 KiB,
// then multiples of 1/8 of the next power of two. Bounds waste at 12.5% and
// lets blocks of similar sizes be reused across steps. 0 for a size above
// 2^62, which no allocator serves (its class would not fit in size_t).
constexpr size_t kLargestRequest = size_t{1} << 62;
size_t SizeClass(size_t size) {
  if (size > kLargestRequest) return 0;
  if (size <= 4096) return (size + 63) & ~size_t{63};
  const int bits =
      64 - __builtin_clzll(static_cast<unsigned long long>(size - 1));
  const size_t pow2 = size_t{1} << bits;  // the power of two >= size
  const size_t step = pow2 / 8;
  return (size + step - 1) / step * step;
}

std::atomic<size_t> g_limit_override{0};

size_t PhysicalMemory() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return kLargestRequest;
  return static_cast<size_t>(pages) * static_cast<size_t>(page);
}

class CachingAllocator : public Allocator {
 public:
  CachingAllocator(Place place, std::function<void*(size_t)> alloc,
                   std::function<void(void*)> free)
      : place_(place),
        system_alloc_(std::move(alloc)),
        system_free_(std::move(free)) {}

  ~CachingAllocator() override { ReleaseCache(); }

  Place place() const override { return place_; }

  void* Allocate(size_t size) override {
    if (size == 0) return nullptr;
    const size_t cls = SizeClass(size);
    const size_t limit = AllocationLimit();
    if (cls == 0 || cls > limit) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.num_allocs;
    void* ptr = nullptr;
    auto it = free_.find(cls);
    if (it != free_.end() && !it->second.empty()) {
      ptr = it->second.back();
      it->second.pop_back();
      stats_.bytes_cached -= cls;
    } else {
      if (stats_.bytes_in_use + stats_.bytes_cached + cls > limit) {
        ReleaseCacheLocked();
      }
      if (stats_.bytes_in_use + cls > limit) return nullptr;
      ptr = system_alloc_(cls);
      if (ptr == nullptr && stats_.bytes_cached > 0) {
        // Out of memory: give the cached blocks back and try once more.
        ReleaseCacheLocked();
        ptr = system_alloc_(cls);
      }
      if (ptr == nullptr) return nullptr;
      ++stats_.num_system_allocs;
    }
    stats_.bytes_in_use += cls;
    if (stats_.bytes_in_use > stats_.peak_bytes_in_use) {
      stats_.peak_bytes_in_use = stats_.bytes_in_use;
    }
    return ptr;
  }

  void Free(void* ptr, size_t size) override {
    if (ptr == nullptr) return;
    size_t cls = SizeClass(size);
    std::lock_guard<std::mutex> lock(mu_);
    free_[cls].push_back(ptr);
    stats_.bytes_in_use -= cls;
    stats_.bytes_cached += cls;
  }

  AllocatorStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

  void ReleaseCache() override {
    std::lock_guard<std::mutex> lock(mu_);
    ReleaseCacheLocked();
  }

  void ResetPeak() override {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.peak_bytes_in_use = stats_.bytes_in_use;
  }

 private:
  // REQUIRES: mu_ held.
  void ReleaseCacheLocked() {
    for (auto& [cls, blocks] : free_) {
      for (void* p : blocks) system_free_(p);
    }
    free_.clear();
    stats_.bytes_cached = 0;
  }

  const Place place_;
  const std::function<void*(size_t)> system_alloc_;
  const std::function<void(void*)> system_free_;
  mutable std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // guarded by mu_
  AllocatorStats stats_;                                 // guarded by mu_
};

struct AllocatorTable {
  std::mutex mu;
  std::map<Place, std::unique_ptr<Allocator>> allocators;
  std::map<Place::Kind, AllocatorFactory> factories;
};

AllocatorTable& Table() {
  // Leaked on purpose: tensors in static storage may free after main.
  static AllocatorTable* table = new AllocatorTable();
  return *table;
}

}  // namespace

std::unique_ptr<Allocator> MakeCachingAllocator(
    Place place, std::function<void*(size_t)> system_alloc,
    std::function<void(void*)> system_free) {
  return std::make_unique<CachingAllocator>(place, std::move(system_alloc),
                                            std::move(system_free));
}

size_t AllocationLimit() {
  if (size_t o = g_limit_override.load(); o != 0) return o;
  static const size_t limit = [] {
    const long configured = GetConfigInt("PAREX_MAX_MEMORY_BYTES");
    if (configured > 0) return static_cast<size_t>(configured);
    return PhysicalMemory();
  }();
  return limit;
}

void SetAllocationLimitForTesting(size_t bytes) { g_limit_override = bytes; }

void RegisterAllocatorFactory(Place::Kind kind, AllocatorFactory factory) {
  auto& table = Table();
  std::lock_guard<std::mutex> lock(table.mu);
  table.factories[kind] = std::move(factory);
}

Allocator* GetAllocator(const Place& place) {
  auto& table = Table();
  std::lock_guard<std::mutex> lock(table.mu);
  auto it = table.allocators.find(place);
  if (it != table.allocators.end()) return it->second.get();
  std::unique_ptr<Allocator> allocator;
  if (place.is_cpu()) {
    allocator = MakeCachingAllocator(
        place,
        [](size_t size) { return std::aligned_alloc(kAllocAlignment, size); },
        [](void* p) { std::free(p); });
  } else {
    auto f = table.factories.find(place.kind);
    PAREX_CHECK(f != table.factories.end(),
                "no allocator for " + place.ToString() +
                    " (is the CUDA library registered?)");
    allocator = f->second(place);
  }
  Allocator* raw = allocator.get();
  table.allocators.emplace(place, std::move(allocator));
  return raw;
}

}  // namespace parex
