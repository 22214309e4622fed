// libparex_cuda.so: the CUDA kernels, allocator, device contexts, visible
// device count and the NCCL communicator, registered into the `parex`
// executable that loads it (apps/cuda_loader.h). Its parex symbols resolve
// against the executable's (which exports them), so there is one kernel
// registry, one allocator table, one communicator registry.
#include "actors/comm/nccl_communicator.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/kernel_registry.h"

extern "C" __attribute__((visibility("default"))) void parex_cuda_register() {
  parex::RegisterCudaKernels(&parex::KernelRegistry::Global());
  parex::RegisterNcclCommunicator();
}
