#include "kernels/visible_devices.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <thread>

#include "base/config.h"

namespace parex {
namespace {

std::atomic<CudaDeviceCounter> cuda_counter{nullptr};
std::atomic<CudaLoader> cuda_loader{nullptr};
std::once_flag cuda_loaded;
std::string cuda_load_error;  // written once, under cuda_loaded

void EnsureCudaLoaded() {
  CudaLoader loader = cuda_loader.load(std::memory_order_acquire);
  if (loader == nullptr) return;
  std::call_once(cuda_loaded, [loader] { cuda_load_error = loader(); });
}

// The count without loading CUDA: 0 until it is loaded.
int LoadedCudaDevices() {
  CudaDeviceCounter counter = cuda_counter.load(std::memory_order_acquire);
  return counter != nullptr ? std::max(0, counter()) : 0;
}

// Why CUDA devices are missing: no CUDA in this parex, or how many are
// visible and what CUDA_VISIBLE_DEVICES says.
std::string CudaVisibility(int visible) {
  if (!HasCuda()) {
    if (!cuda_load_error.empty()) {
      return "this parex could not load its CUDA support: " + cuda_load_error;
    }
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

void SetCudaLoader(CudaLoader loader) {
  cuda_loader.store(loader, std::memory_order_release);
}

bool HasCuda() {
  EnsureCudaLoaded();
  return cuda_counter.load(std::memory_order_acquire) != nullptr;
}

int VisibleCudaDevices() {
  EnsureCudaLoaded();
  return LoadedCudaDevices();
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
  counts.cuda = LoadedCudaDevices();  // a list naming cuda loaded it
  return counts;
}

StatusOr<std::vector<Place>> ParseMachinePlaceList(const std::string& spec) {
  if (spec.find("cuda") != std::string::npos) EnsureCudaLoaded();
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
