// CudaDeviceContext: the DeviceContext of one CUDA device. It owns a
// non-blocking stream (no implicit ordering with the legacy default stream)
// and a cuBLAS handle bound to that stream, and creates a cuDNN handle bound
// to it on first use; every kernel, copy and event of the context is queued
// on the stream, so they run in the order issued.
//
// Ownership: the context owns its stream and cuBLAS handle and destroys them
// with itself; the cuDNN handle is destroyed with the last context sharing
// it (NewOnSameStream); work already queued still completes. Tensors used by
// queued work must outlive it (callers Synchronize or wait on an event first).
// Thread-safety: as DeviceContext, one actor or thread at a time. Methods
// make the context's device current on the calling thread, since CUDA's
// current device is per thread and actors move between threads.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <memory>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "kernels/device_context.h"

namespace parex {

// A cudaEvent_t (timing disabled). It is created on its first RecordEvent, so
// creating a CudaEvent never fails; before that first record it counts as
// complete, as an unrecorded cudaEvent_t does.
class CudaEvent : public Event {
 public:
  CudaEvent() = default;
  ~CudaEvent() override;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  bool Query() override;
  Status Synchronize() override;

  // nullptr until recorded once.
  cudaEvent_t get() const { return event_; }
  // The device the event was created on (-1 before the first record).
  int device() const { return device_; }

 private:
  friend class CudaDeviceContext;
  // Creates the cudaEvent_t on `device` if there is none yet.
  Status EnsureCreated(int device);

  cudaEvent_t event_ = nullptr;
  int device_ = -1;
};

class CudaDeviceContext : public DeviceContext {
 public:
  // A context for `place`, which must be cuda:i with a visible device i;
  // otherwise an error naming the place (no device is never a crash). Also
  // registers the CUDA allocator factory (cuda_allocator.h).
  static StatusOr<std::unique_ptr<CudaDeviceContext>> Create(Place place);

  ~CudaDeviceContext() override;
  CudaDeviceContext(const CudaDeviceContext&) = delete;
  CudaDeviceContext& operator=(const CudaDeviceContext&) = delete;

  Status Synchronize() override;
  std::unique_ptr<Event> CreateEvent() override;
  // `event` must come from CreateEvent of a CudaDeviceContext of the same
  // device (another kind is InvalidArgument; another device a CUDA error).
  Status RecordEvent(Event* event) override;
  // A CudaEvent is waited on by the stream (no host blocking); any other
  // Event (e.g. a CPU context's) is waited for on the host.
  Status WaitEvent(Event* event) override;
  // Copies are cudaMemcpyAsync on the stream. With pageable host memory the
  // runtime may finish or stage a copy before returning, with pinned memory
  // it does not: read `dst` of CopyToHost only after Synchronize (or an
  // event), and keep the source of CopyFromHost alive until then.
  // CopyOnDevice's ranges must not overlap (the CPU context's may).
  // Shares this context's stream, cuBLAS handle (not owned: destroying the
  // new context leaves them alone) and cuDNN handle (made once for both).
  std::unique_ptr<DeviceContext> NewOnSameStream() const override;
  void* native_stream() const override { return stream_; }
  Status CopyToHost(void* dst, const void* src, size_t bytes) override;
  Status CopyFromHost(void* dst, const void* src, size_t bytes) override;
  Status CopyOnDevice(void* dst, const void* src, size_t bytes) override;
  // fp32 and fp64, up to kMaxSumInputs buffers each way.
  Status SumToAll(const std::vector<const void*>& inputs,
                  const std::vector<void*>& outputs, DType dtype,
                  int64_t n) override;
  // A CUDA graph (cudaStreamBeginCapture in relaxed mode on this stream;
  // `joined` must be CudaDeviceContexts of the same device).
  Status BeginCapture(const std::vector<DeviceContext*>& joined) override;
  StatusOr<std::unique_ptr<DeviceGraph>> EndCapture(
      const std::vector<DeviceContext*>& joined) override;
  // Pinned host memory (cudaMallocHost); null when the driver refuses.
  void* AllocateHostStaging(size_t bytes) override;
  void FreeHostStaging(void* ptr) override;
  // Pinned host memory (portable: every device's copies read it), cached;
  // one allocator for the process.
  Allocator* host_allocator() const override;

  int device() const { return place().id; }
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }
  // The cuDNN handle bound to stream(), created on the first call (contexts
  // that never convolve pay nothing); an error naming the place when cuDNN
  // cannot start. Thread-safe.
  StatusOr<cudnnHandle_t> cudnn() const;
  // Makes this context's device current on the calling thread; kernels call
  // it before launching.
  Status Activate() const;

 private:
  // A cuDNN handle made on demand, shared by the contexts of one stream.
  struct CudnnSlot {
    std::mutex mu;
    cudnnHandle_t handle = nullptr;  // guarded by mu; null until made
    int device = -1;
    ~CudnnSlot();
  };

  CudaDeviceContext(Place place, cudaStream_t stream, cublasHandle_t cublas,
                    std::shared_ptr<CudnnSlot> cudnn, bool owns);

  Status Copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);

  cudaStream_t stream_;
  cublasHandle_t cublas_;             // bound to stream_
  std::shared_ptr<CudnnSlot> cudnn_;  // never null; shared with same-stream
  bool owns_;  // destroys stream_ and cublas_ with itself
  void* cublas_workspace_ = nullptr;  // cublas_'s own (owned with it)
  // The fork and join points of a capture (kept until it ends).
  CudaEvent capture_fork_;
  std::vector<std::unique_ptr<CudaEvent>> capture_joins_;
};

// Makes CreateDeviceContext (kernels/device_context.h) create
// CudaDeviceContexts for cuda places; RegisterCudaKernels calls it.
void RegisterCudaDeviceContextFactory();

}  // namespace parex
