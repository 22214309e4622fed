// DevicePlaces: what a ParallelExecutor keeps for places with memory of
// their own (DESIGN.md §3.4: a GPU's): a compute stream per place, a
// communication stream per device (place 0's is where collectives start
// and end; NCCL queues each GPU's part on that GPU's) and the fetch stream
// of place 0's device, as DeviceContexts
// (kernels/device_context.h: CUDA streams on cuda places), and the copies
// between the host and the places: feeds in, fetched values and persistables
// out.
//
// The executor takes this path for cuda places, and for cpu places when
// ExecutionStrategy::device_streams asks (the tests run the whole device
// path that way without a GPU: CPU contexts, whose copies are memcpy and
// whose events are complete when recorded).
//
// Thread-safety: a context is used by one actor or thread at a time (the
// stream actor of its stream; the executor's thread between steps).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/status.h"
#include "kernels/device_context.h"
#include "kernels/tensor.h"

namespace parex {

// Whether `places` span several devices (not only the slots of one).
bool OnSeveralDevices(const std::vector<Place>& places);
// Places on several GPUs must be one place per GPU (NCCL takes one rank
// per GPU) with a communicator between GPUs built in (Unimplemented naming
// the places otherwise); places of one device pass.
Status CheckDevicesOfPlaces(const std::vector<Place>& places);

class DevicePlaces {
 public:
  // Contexts for `places` (CreateDeviceContext: errors name the place).
  static StatusOr<std::unique_ptr<DevicePlaces>> Create(
      const std::vector<Place>& places);

  DeviceContext* compute(int place) const { return compute_[place].get(); }
  DeviceContext* communication() const { return communication_[0].get(); }
  // The communication stream of place `place`'s device (places sharing a
  // device share it).
  DeviceContext* communication(int place) const {
    return communication_[communication_of_[place]].get();
  }
  // Every communication stream, place 0's first.
  std::vector<DeviceContext*> communication_streams() const;
  DeviceContext* fetch() const { return fetch_.get(); }

  ~DevicePlaces();

  // `dst` (on place `place`, its memory kept when large enough) becomes a
  // copy of host tensor `src` (dtype, dims, LoD and data), queued on the
  // place's compute stream. `src` may be freed once this returns.
  Status CopyIn(int place, const Tensor& src, Tensor* dst) const;
  // The same for a feed. A `src` made by the place's host_allocator (pinned
  // on CUDA) is copied directly: it must stay as it is until the step's
  // streams are synchronised (a step holds its feeds until then). Any
  // other goes through the place's staging buffer for `name` (pinned on
  // CUDA, reused step after step, grown when a batch is larger), so the
  // copy to the device is asynchronous either way.
  // REQUIRES: the previous step's copies finished (SynchronizeAll).
  Status Feed(int place, const std::string& name, const Tensor& src,
              Tensor* dst);
  // A host buffer of at least `bytes` kept for op handle `op` of `owner`
  // (its OpHandleTasks) on place `place`, reused step after step (pinned
  // on CUDA, so copies from and to it are asynchronous and can be captured
  // in a CUDA graph); grown when too small, which frees the old one.
  // REQUIRES: no copy from or to the old buffer is still queued.
  // Thread-safe (the op handles of several streams ask at once).
  StatusOr<void*> HostBuffer(const void* owner, int op, int place,
                             size_t bytes) const;
  // A host copy of `src` through `context`, complete when this returns.
  static StatusOr<Tensor> CopyOut(DeviceContext* context, const Tensor& src);
  // Waits for every stream's work. With `health` (a backend whose failures
  // show after its calls returned: NCCL), waits by polling the streams and
  // `health`, and gives up after `timeout_ms`: a failure of `health`, or
  // Aborted naming the streams still busy.
  Status SynchronizeAll() const;
  Status SynchronizeAll(const std::function<Status()>& health,
                        long timeout_ms) const;

 private:
  // Compute, communication and fetch streams.
  std::vector<DeviceContext*> AllStreams() const;

  std::vector<Place> places_;
  std::vector<std::unique_ptr<DeviceContext>> compute_;
  std::vector<std::unique_ptr<DeviceContext>> communication_;
  std::vector<int> communication_of_;  // place -> index in communication_
  std::unique_ptr<DeviceContext> fetch_;
  // One per stream of AllStreams(), for the polling SynchronizeAll.
  mutable std::vector<std::unique_ptr<Event>> poll_events_;
  struct Staging {
    void* data = nullptr;
    size_t bytes = 0;
  };
  std::map<std::pair<int, std::string>, Staging> staging_;  // (place, feed)
  mutable std::mutex buffers_mu_;
  using BufferKey = std::tuple<const void*, int, int>;  // owner, op, place
  mutable std::map<BufferKey, Staging> buffers_;        // HostBuffer's
};

}  // namespace parex
