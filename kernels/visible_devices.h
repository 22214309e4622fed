// The devices this process can put places on: the cores it may run on and
// the CUDA devices it sees. The CUDA count comes from parex_kernels_cuda:
// an executable that links it installs the counter (RegisterCudaDevices in
// kernels/cuda/cuda_info.h); without one, this parex has no CUDA.
// Thread-safety: every function may be called concurrently.
#pragma once

#include <string>
#include <vector>

#include "base/place.h"
#include "base/status.h"

namespace parex {

// Counts the visible CUDA devices (0 when there is no driver or device).
using CudaDeviceCounter = int (*)();
// Installs `counter`; nullptr removes it (this parex then has no CUDA).
void SetCudaDeviceCounter(CudaDeviceCounter counter);

// A program may load its CUDA support on demand: `loader` runs once, the
// first time CUDA is asked about (HasCuda, VisibleCudaDevices, a place list
// naming cuda, CheckPlacesVisible with a CUDA place), and installs the
// counter; it returns "" or why CUDA could not be loaded (said in the
// errors about CUDA places). The `parex` executable loads libparex_cuda.so
// so (apps/cuda_loader.h): CPU runs never map cuBLAS or cuDNN.
using CudaLoader = std::string (*)();
void SetCudaLoader(CudaLoader loader);

bool HasCuda();            // a counter is installed (after loading)
int VisibleCudaDevices();  // 0 without CUDA
int UsableCpuCores();      // in this process's affinity mask; at least 1

// What "all" stands for in a place list on this machine.
PlaceCounts MachinePlaceCounts();

// ParsePlaceList(spec, MachinePlaceCounts()). Its FailedPrecondition
// ("cuda:all" with no device visible) says why no device is visible.
StatusOr<std::vector<Place>> ParseMachinePlaceList(const std::string& spec);

// OK when every CUDA place of `places` is on a visible device; otherwise
// FailedPrecondition naming the first that is not and why: this parex was
// built without CUDA, or how many devices are visible and what
// CUDA_VISIBLE_DEVICES says (CUDA numbers the visible devices from 0).
Status CheckPlacesVisible(const std::vector<Place>& places);

}  // namespace parex
