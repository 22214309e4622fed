#include "actors/comm/device_communicators.h"

#include <map>
#include <mutex>
#include <string>

namespace parex {
namespace {

std::mutex& RegistryMutex() {
  static std::mutex mu;
  return mu;
}

std::map<Place::Kind, DeviceCommunicatorFactory>& Registry() {
  static std::map<Place::Kind, DeviceCommunicatorFactory> factories;
  return factories;
}

}  // namespace

void RegisterDeviceCommunicator(Place::Kind kind,
                                DeviceCommunicatorFactory factory) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry()[kind] = std::move(factory);
}

bool HasDeviceCommunicator(Place::Kind kind) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  return Registry().count(kind) != 0;
}

StatusOr<std::shared_ptr<Communicator>> CreateDeviceCommunicator(
    const std::vector<Place>& places,
    const std::vector<DeviceContext*>& streams) {
  if (places.empty()) return InvalidArgument("a communicator of no places");
  DeviceCommunicatorFactory factory;
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    auto it = Registry().find(places[0].kind);
    if (it != Registry().end()) factory = it->second;
  }
  if (!factory) {
    return Unimplemented("places " + places[0].ToString() + " ... " +
                         places.back().ToString() +
                         ": no communicator between devices of this kind is "
                         "built into this program (NCCL comes with CUDA)");
  }
  return factory(places, streams);
}

}  // namespace parex
