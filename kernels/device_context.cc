#include "kernels/device_context.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "base/config.h"
#include "kernels/allocator.h"

namespace parex {
namespace {

class CompletedEvent : public Event {
 public:
  bool Query() override { return true; }
  Status Synchronize() override { return Status::Ok(); }
};

}  // namespace

DeviceContext::DeviceContext(Place place)
    : place_(place),
      seed_(static_cast<uint64_t>(GetConfigInt("PAREX_SEED"))),
      seed_generator_(seed_) {}

uint64_t DeviceContext::NextSeed(int64_t op_seed) {
  if (op_seed != 0) return static_cast<uint64_t>(op_seed);
  if (step_ >= 0 && !keyed_) {
    // SplitMix64's finaliser over the seed and the step: distinct steps
    // give unrelated generator states.
    uint64_t z =
        seed_ + 0x9e3779b97f4a7c15ull * (static_cast<uint64_t>(step_) + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    seed_generator_.seed(z ^ (z >> 31));
    keyed_ = true;
  }
  return seed_generator_();
}

void* DeviceContext::AllocateHostStaging(size_t bytes) {
  return std::malloc(bytes == 0 ? 1 : bytes);
}

void DeviceContext::FreeHostStaging(void* ptr) { std::free(ptr); }

Status DeviceContext::SumToAll(const std::vector<const void*>&,
                               const std::vector<void*>&, DType, int64_t) {
  return Unimplemented("SumToAll on " + place().ToString());
}

Status DeviceContext::BeginCapture(const std::vector<DeviceContext*>&) {
  return Unimplemented(place().ToString() + " has no graph capture");
}

StatusOr<std::unique_ptr<DeviceGraph>> DeviceContext::EndCapture(
    const std::vector<DeviceContext*>&) {
  return Unimplemented(place().ToString() + " has no graph capture");
}

std::unique_ptr<Event> CpuDeviceContext::CreateEvent() {
  return std::make_unique<CompletedEvent>();
}

Status CpuDeviceContext::CopyToHost(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
  return Status::Ok();
}

Status CpuDeviceContext::CopyFromHost(void* dst, const void* src,
                                      size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
  return Status::Ok();
}

Allocator* CpuDeviceContext::host_allocator() const {
  // Stands for a device's pinned pool (CPU contexts stand for a device's
  // streams in the executor's device path, ExecutionStrategy::
  // device_streams): host memory apart from the CPU allocator's, so a feed
  // made from it is told from a plain one and both feed paths run.
  static Allocator* const pool =
      MakeCachingAllocator(
          Place::CPU(),
          [](size_t size) {
            return std::aligned_alloc(kAllocAlignment,
                                      (size + kAllocAlignment - 1) /
                                          kAllocAlignment * kAllocAlignment);
          },
          [](void* ptr) { std::free(ptr); })
          .release();
  return pool;
}

Status CpuDeviceContext::CopyOnDevice(void* dst, const void* src,
                                      size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
  return Status::Ok();
}

namespace {

struct Factories {
  std::mutex mu;
  std::map<Place::Kind, DeviceContextFactory> by_kind;
};

Factories& TheFactories() {
  static Factories* factories = new Factories;  // never destroyed
  return *factories;
}

}  // namespace

void RegisterDeviceContextFactory(Place::Kind kind,
                                  DeviceContextFactory factory) {
  Factories& f = TheFactories();
  std::lock_guard<std::mutex> lock(f.mu);
  f.by_kind[kind] = std::move(factory);
}

StatusOr<std::unique_ptr<DeviceContext>> CreateDeviceContext(Place place) {
  if (place.is_cpu() || place.is_sim()) {
    return std::unique_ptr<DeviceContext>(
        std::make_unique<CpuDeviceContext>(place));
  }
  DeviceContextFactory factory;
  {
    Factories& f = TheFactories();
    std::lock_guard<std::mutex> lock(f.mu);
    auto it = f.by_kind.find(place.kind);
    if (it != f.by_kind.end()) factory = it->second;
  }
  if (!factory) {
    return FailedPrecondition("place " + place.ToString() +
                              ": this parex has no device context for " +
                              PlaceKindName(place.kind) +
                              " places (built without it?)");
  }
  return factory(place);
}

}  // namespace parex
