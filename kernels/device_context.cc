#include "kernels/device_context.h"

#include <cstring>

#include "base/config.h"

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
      seed_generator_(static_cast<uint64_t>(GetConfigInt("PAREX_SEED"))) {}

uint64_t DeviceContext::NextSeed(int64_t op_seed) {
  if (op_seed != 0) return static_cast<uint64_t>(op_seed);
  return seed_generator_();
}

std::unique_ptr<Event> CpuDeviceContext::CreateEvent() {
  return std::make_unique<CompletedEvent>();
}

Status CpuDeviceContext::CopyToHost(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
  return Status::Ok();
}

Status CpuDeviceContext::CopyFromHost(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
  return Status::Ok();
}

Status CpuDeviceContext::CopyOnDevice(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
  return Status::Ok();
}

}  // namespace parex
