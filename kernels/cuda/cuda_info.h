// What the CUDA runtime and NCCL found on this machine, and device selection.
// Thread-safety: every function may be called concurrently; the current
// device is per thread in CUDA, so a guard affects only its own thread.
#pragma once

#include <string>

#include "base/place.h"
#include "base/status.h"

namespace parex {

// Number of visible CUDA devices; 0 (not an error) when there is no driver
// or no device. Never aborts.
int CudaDeviceCount();

// Installs CudaDeviceCount as this process's CUDA device counter
// (kernels/visible_devices.h), so that place lists and place checks see the
// CUDA devices. An executable that links parex_kernels_cuda calls it once at
// start; calling it again changes nothing.
void RegisterCudaDevices();

// OK when `place` is cuda:i and device i is visible; otherwise an error that
// names the place (InvalidArgument for a non-CUDA place, FailedPrecondition
// when the device is missing).
Status CheckCudaPlace(const Place& place);

// "2.28.9": the version of the NCCL library linked in (ncclGetVersion).
std::string NcclVersionString();

// Makes `device` current on the calling thread for the guard's lifetime and
// restores the previous device afterwards.
class CudaDeviceGuard {
 public:
  explicit CudaDeviceGuard(int device);
  ~CudaDeviceGuard();
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;

  // Non-OK when the device could not be made current.
  const Status& status() const { return status_; }

 private:
  int previous_ = -1;  // -1: nothing to restore
  Status status_;
};

}  // namespace parex
