#include "kernels/visible_devices.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "base/config.h"

namespace parex {
namespace {

std::atomic<CudaDeviceCounter> cuda_counter{nullptr};

// Why CUDA devices are missing: no CUDA in this parex, or how many are
// visible and what CUDA_VISIBLE_DEVICES says.
std::string CudaVisibility(int visible) {
  if (!HasCuda()) {
    return "this parex was built without CUDA support (it runs cpu and sim "
           "places)";
  }
  std::string text = std::to_string(visible) + " CUDA device" +
                     (visible == 1 ? "" : "s") + " visible";
  if (ConfigIsSet("CUDA_VISIBLE_DEVICES")) {
    text += ", CUDA_VISIBLE_DEVICES='" + GetConfig("CUDA_VISIBLE_DEVICES") +
            "' (CUDA numbers the visible devices from 0: cuda:0 is the "
            "first of them)";
  } else {
    text += ", CUDA_VISIBLE_DEVICES not set";
  }
  return text;
}

}  // namespace

void SetCudaDeviceCounter(CudaDeviceCounter counter) {
  cuda_counter.store(counter, std::memory_order_release);
}

bool HasCuda() {
  return cuda_counter.load(std::memory_order_acquire) != nullptr;
}

int VisibleCudaDevices() {
  CudaDeviceCounter counter = cuda_counter.load(std::memory_order_acquire);
  return counter != nullptr ? std::max(0, counter()) : 0;
}

int UsableCpuCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    return std::max(1, CPU_COUNT(&set));
  }
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

PlaceCounts MachinePlaceCounts() {
  PlaceCounts counts;
  counts.cpu = UsableCpuCores();
  counts.cuda = VisibleCudaDevices();
  return counts;
}

StatusOr<std::vector<Place>> ParseMachinePlaceList(const std::string& spec) {
  const PlaceCounts counts = MachinePlaceCounts();
  StatusOr<std::vector<Place>> places = ParsePlaceList(spec, counts);
  if (places.status().code() == StatusCode::kFailedPrecondition) {
    return FailedPrecondition(places.status().message() + ": " +
                              CudaVisibility(counts.cuda));
  }
  return places;
}

Status CheckPlacesVisible(const std::vector<Place>& places) {
  int visible = -1;  // counted at the first CUDA place
  for (const Place& p : places) {
    if (!p.is_cuda()) continue;
    if (visible < 0) visible = VisibleCudaDevices();
    if (!HasCuda()) {
      return FailedPrecondition("place " + p.ToString() + ": " +
                                CudaVisibility(visible));
    }
    if (p.id >= visible) {
      return FailedPrecondition("place " + p.ToString() +
                                ": no such CUDA device (" +
                                CudaVisibility(visible) + ")");
    }
  }
  return Status::Ok();
}

}  // namespace parex
