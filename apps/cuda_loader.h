// The `parex` executable's CUDA support, loaded on demand: the CUDA
// kernels, allocator, device contexts and NCCL communicator live in
// libparex_cuda.so (apps/cuda_module.cc), which `parex` opens the first
// time a place list names cuda (kernels/visible_devices.h). A CPU run then
// never maps cuBLAS, cuBLAS Lt, cuDNN or NCCL: cuBLAS Lt alone kept ~140 MiB
// resident in every process (H200 machine and this one, CUDA 13).
#pragma once

namespace parex {

// Makes libparex_cuda.so the CUDA loader of this process: looked for beside
// the executable (/proc/self/exe), then on the library path.
void InstallCudaLoader();

}  // namespace parex
