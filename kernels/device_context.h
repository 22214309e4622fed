// DeviceContext: one stream of work on one place, with the event interface the
// runtime orders streams by. The CPU context runs work synchronously, so its
// events are complete when recorded; the CUDA context (kernels/cuda/) wraps a
// cudaStream_t and cudaEvent_t.
// Thread-safety: a DeviceContext is used by one actor (or thread) at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "base/dtype.h"
#include "base/place.h"
#include "base/status.h"

namespace parex {

class Allocator;

class Event {
 public:
  virtual ~Event() = default;
  // True when the work recorded before it has finished.
  virtual bool Query() = 0;
  // Blocks the calling thread until Query() is true.
  virtual Status Synchronize() = 0;
};

// One step's device work captured once and replayed as a whole (a CUDA
// graph): no host work between its kernels.
class DeviceGraph {
 public:
  virtual ~DeviceGraph() = default;
  // Queues the captured work again on the stream it was captured from.
  virtual Status Launch() = 0;
};

class DeviceContext {
 public:
  explicit DeviceContext(Place place);
  virtual ~DeviceContext() = default;

  Place place() const { return place_; }

  // Blocks until all work queued on this context has finished.
  virtual Status Synchronize() = 0;
  virtual std::unique_ptr<Event> CreateEvent() = 0;
  // `event` completes when the work queued so far completes.
  virtual Status RecordEvent(Event* event) = 0;
  // Work queued after this call starts after `event` completes.
  virtual Status WaitEvent(Event* event) = 0;
  // A context on this context's stream (work queued on either is ordered
  // with the other's), with its own random-seed state: one per op handle
  // of a stream. The stream (and its library handles) stays this
  // context's: the new one must not outlive it.
  virtual std::unique_ptr<DeviceContext> NewOnSameStream() const = 0;
  // The stream as the device's own libraries take it (a cudaStream_t on
  // CUDA), for a collective library (NCCL) that queues work on it; null
  // where work is not queued on a stream (the CPU).
  virtual void* native_stream() const { return nullptr; }
  // Byte copies between the host and this context's place, or within it;
  // ordered with the context's other work.
  virtual Status CopyToHost(void* dst, const void* src, size_t bytes) = 0;
  virtual Status CopyFromHost(void* dst, const void* src, size_t bytes) = 0;
  virtual Status CopyOnDevice(void* dst, const void* src, size_t bytes) = 0;
  // An all-reduce of buffers this context addresses, in one pass:
  // outputs[k][i] = inputs[0][i] + inputs[1][i] + ... (rank order, the
  // `sum` op's additions) for every k and i < n; an output may be an input.
  // The base has no such kernel: Unimplemented (the caller sums with the
  // `sum` op and copies).
  virtual Status SumToAll(const std::vector<const void*>& inputs,
                          const std::vector<void*>& outputs, DType dtype,
                          int64_t n);
  // Host memory this context copies from and to without staging of its
  // own (pinned on CUDA, so a copy is truly asynchronous; plain memory on
  // the CPU), for buffers reused step after step (feeds). Null when it
  // cannot be had. Release with FreeHostStaging of the same context.
  virtual void* AllocateHostStaging(size_t bytes);
  virtual void FreeHostStaging(void* ptr);
  // Where host tensors are best made when they are to be copied to this
  // context's place step after step (a reader's batches): a caching
  // allocator of host memory its copies read without a staging copy of
  // their own (pinned on CUDA, one for the process; on the CPU a host pool
  // of its own, so the device path's two feed ways run without a GPU). A
  // feed from it is copied in directly, any other through a staging
  // buffer. Null: a plain host tensor serves as well.
  virtual Allocator* host_allocator() const { return nullptr; }
  // Capture: from BeginCapture until EndCapture the work queued on this
  // context's stream, and on the streams of `joined` (contexts of the same
  // device, which wait for this stream at the start and are waited for at
  // the end), is recorded into a graph instead of run. Nothing may wait
  // for the device on the host meanwhile. EndCapture always ends the
  // capture; an error there (work that cannot be captured) leaves the
  // streams as they were before BeginCapture, with nothing run. The base
  // (CPU) has no graphs: Unimplemented.
  virtual Status BeginCapture(const std::vector<DeviceContext*>& joined);
  virtual StatusOr<std::unique_ptr<DeviceGraph>> EndCapture(
      const std::vector<DeviceContext*>& joined);

  // Seed for a random op: `op_seed` when non-zero, else the next draw of
  // this context's generator (seeded by PAREX_SEED or SetSeed), so a program
  // run twice from the same seed draws the same numbers. After SetStep the
  // generator restarts from a key of (seed, step) at the step's first draw:
  // what a step draws then depends on the step's number only, not on the
  // steps this process ran before it (a resumed run draws as an
  // uninterrupted one would).
  uint64_t NextSeed(int64_t op_seed);
  void SetSeed(uint64_t seed) {
    seed_ = seed;
    seed_generator_.seed(seed);
  }
  void SetStep(int64_t step) {
    step_ = step;
    keyed_ = false;
  }

 private:
  Place place_;
  uint64_t seed_ = 0;
  int64_t step_ = -1;  // -1: no SetStep, one stream from the seed
  bool keyed_ = false;
  std::mt19937_64 seed_generator_;
};

class CpuDeviceContext : public DeviceContext {
 public:
  explicit CpuDeviceContext(Place place = Place::CPU())
      : DeviceContext(place) {}

  Status Synchronize() override { return Status::Ok(); }
  std::unique_ptr<Event> CreateEvent() override;
  Status RecordEvent(Event*) override { return Status::Ok(); }
  Status WaitEvent(Event*) override { return Status::Ok(); }
  std::unique_ptr<DeviceContext> NewOnSameStream() const override {
    return std::make_unique<CpuDeviceContext>(place());
  }
  Status CopyToHost(void* dst, const void* src, size_t bytes) override;
  Status CopyFromHost(void* dst, const void* src, size_t bytes) override;
  Status CopyOnDevice(void* dst, const void* src, size_t bytes) override;
  Allocator* host_allocator() const override;
};

// A new context (and stream) for `place`: a CpuDeviceContext for cpu and
// sim places; other kinds need their factory registered first (the CUDA
// library registers cuda's in RegisterCudaKernels). Errors name the place.
using DeviceContextFactory =
    std::function<StatusOr<std::unique_ptr<DeviceContext>>(Place)>;
void RegisterDeviceContextFactory(Place::Kind kind,
                                  DeviceContextFactory factory);
StatusOr<std::unique_ptr<DeviceContext>> CreateDeviceContext(Place place);

}  // namespace parex
