// The allocator of CUDA places: the shared caching allocator
// (kernels/allocator.h) over cudaMalloc / cudaFree on the place's device.
//
// Blocks freed to the cache are reused without synchronisation, which is
// safe while one stream per device (one CudaDeviceContext) uses them: work
// queued on that stream with a reused block runs after the work that used it
// before. Contexts that share a device across streams must order their work
// with events before a tensor of one is freed and reallocated by the other.
#pragma once

namespace parex {

// Installs the factory for Place::Kind::kCUDA with RegisterAllocatorFactory.
// Idempotent and thread-safe; CudaDeviceContext::Create and
// RegisterCudaKernels call it. An allocation on a missing device aborts with
// the place and size (Allocator's out-of-memory contract).
void RegisterCudaAllocator();

}  // namespace parex
