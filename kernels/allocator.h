// Allocators: one per place. The CPU allocator hands out 64-byte aligned
// blocks, keeps freed blocks in per-size free lists for reuse (the steady-state
// step allocates nothing new), and reports bytes in use and the peak.
// Thread-safety: every method may be called concurrently.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "base/place.h"

namespace parex {

struct AllocatorStats {
  size_t bytes_in_use = 0;  // handed out and not yet freed
  size_t peak_bytes_in_use = 0;
  size_t bytes_cached = 0;       // freed, kept for reuse
  size_t num_allocs = 0;         // calls to Allocate
  size_t num_system_allocs = 0;  // of which went to the system
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual Place place() const = 0;
  // A block of `size` bytes, or nullptr when it cannot be had: the system
  // refused it (after the cache was given back), or it would take the bytes
  // in use past the allocator's limit (AllocationLimit). Allocate(0) returns
  // nullptr too. Callers turn nullptr into a ResourceExhausted Status
  // (Tensor::TryAllocate) or, for sizes they own, a PAREX_CHECK.
  virtual void* Allocate(size_t size) = 0;
  // REQUIRES: `ptr` came from Allocate(size) of this allocator.
  virtual void Free(void* ptr, size_t size) = 0;
  virtual AllocatorStats stats() const = 0;
  // Returns cached blocks to the system.
  virtual void ReleaseCache() = 0;
  virtual void ResetPeak() = 0;
};

inline constexpr size_t kAllocAlignment = 64;

// The most bytes one allocator hands out at once: PAREX_MAX_MEMORY_BYTES, or
// when unset or 0 the machine's physical memory. A request above it fails
// without asking the system (Linux overcommits: a crafted size would
// otherwise "succeed" and kill the process when touched).
size_t AllocationLimit();
// Overrides the limit for allocators created afterwards (fuzzers, tests).
void SetAllocationLimitForTesting(size_t bytes);

// The allocator of a place, created on first use and alive until exit.
// CPU places are built in; other kinds need RegisterAllocatorFactory first.
Allocator* GetAllocator(const Place& place);

using AllocatorFactory =
    std::function<std::unique_ptr<Allocator>(const Place&)>;
// Installs the allocator maker for a place kind (the CUDA library does this).
void RegisterAllocatorFactory(Place::Kind kind, AllocatorFactory factory);

// A caching allocator over an allocate/free pair; used for CPU and CUDA.
std::unique_ptr<Allocator> MakeCachingAllocator(
    Place place, std::function<void*(size_t)> system_alloc,
    std::function<void(void*)> system_free);

}  // namespace parex
