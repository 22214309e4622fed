#include "actors/executor/device_places.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "actors/comm/device_communicators.h"

namespace parex {

bool OnSeveralDevices(const std::vector<Place>& places) {
  for (const Place& p : places) {
    if (!SameMemory(p, places[0])) return true;
  }
  return false;
}

Status CheckDevicesOfPlaces(const std::vector<Place>& places) {
  if (places.empty() || !places[0].is_cuda() || !OnSeveralDevices(places)) {
    return Status::Ok();
  }
  for (size_t i = 0; i < places.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (places[i].id == places[j].id) {
        return Unimplemented(
            "places " + places[j].ToString() + " and " + places[i].ToString() +
            " share a GPU while other places are on other GPUs; run one "
            "place per GPU (cuda:all, cuda:0,cuda:1) or the places of one "
            "GPU (cuda:0x2)");
      }
    }
  }
  if (!HasDeviceCommunicator(Place::Kind::kCUDA)) {
    return Unimplemented("places " + places[0].ToString() + " and " +
                         places[1].ToString() +
                         " are on different GPUs, and this program was built "
                         "without the NCCL communicator");
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<DevicePlaces>> DevicePlaces::Create(
    const std::vector<Place>& places) {
  auto d = std::unique_ptr<DevicePlaces>(new DevicePlaces);
  d->places_ = places;
  for (const Place& p : places) {
    PAREX_ASSIGN_OR_RETURN(std::unique_ptr<DeviceContext> c,
                           CreateDeviceContext(p));
    d->compute_.push_back(std::move(c));
  }
  if (!places.empty()) {
    PAREX_ASSIGN_OR_RETURN(d->fetch_, CreateDeviceContext(places[0]));
  }
  // A communication stream per device, in the order of the places.
  for (size_t i = 0; i < places.size(); ++i) {
    size_t j = 0;
    while (j < i && !SameMemory(places[j], places[i])) ++j;
    if (j < i) {
      d->communication_of_.push_back(d->communication_of_[j]);
      continue;
    }
    PAREX_ASSIGN_OR_RETURN(std::unique_ptr<DeviceContext> c,
                           CreateDeviceContext(places[i]));
    d->communication_of_.push_back(static_cast<int>(d->communication_.size()));
    d->communication_.push_back(std::move(c));
  }
  return d;
}

DevicePlaces::~DevicePlaces() {
  for (auto& [key, staging] : staging_) {
    compute_[key.first]->FreeHostStaging(staging.data);
  }
  for (auto& [key, buffer] : buffers_) {
    compute_[0]->FreeHostStaging(buffer.data);
  }
}

StatusOr<void*> DevicePlaces::HostBuffer(const void* owner, int op, int place,
                                         size_t bytes) const {
  std::lock_guard<std::mutex> lock(buffers_mu_);
  Staging& buffer = buffers_[BufferKey{owner, op, place}];
  if (buffer.data != nullptr && buffer.bytes >= bytes) return buffer.data;
  compute_[0]->FreeHostStaging(buffer.data);
  buffer = Staging{compute_[0]->AllocateHostStaging(bytes), bytes};
  if (buffer.data == nullptr) {
    buffer.bytes = 0;
    return ResourceExhausted("no host staging memory for " +
                             std::to_string(bytes) + " bytes (op handle " +
                             std::to_string(op) + ", " +
                             places_[place].ToString() + ")");
  }
  return buffer.data;
}

Status DevicePlaces::Feed(int place, const std::string& name, const Tensor& src,
                          Tensor* dst) {
  DeviceContext* context = compute_[place].get();
  const Allocator* host = context->host_allocator();
  if (host != nullptr && src.allocator() == host)
    return CopyIn(place, src, dst);
  Staging& staging = staging_[{place, name}];
  const size_t bytes = src.bytes();
  if (staging.data == nullptr || staging.bytes < bytes) {
    context->FreeHostStaging(staging.data);
    staging = Staging{context->AllocateHostStaging(bytes), bytes};
    if (staging.data == nullptr) {
      staging.bytes = 0;
      return ResourceExhausted("no host staging memory for " +
                               std::to_string(bytes) + " bytes on " +
                               places_[place].ToString());
    }
  }
  if (bytes > 0) std::memcpy(staging.data, src.raw_data(), bytes);
  PAREX_RETURN_IF_ERROR(
      dst->TryAllocate(src.dtype(), src.dims(), places_[place]));
  dst->set_lod(src.lod());
  return context->CopyFromHost(dst->raw_data(), staging.data, bytes);
}

Status DevicePlaces::CopyIn(int place, const Tensor& src, Tensor* dst) const {
  PAREX_RETURN_IF_ERROR(
      dst->TryAllocate(src.dtype(), src.dims(), places_[place]));
  dst->set_lod(src.lod());
  return compute_[place]->CopyFromHost(dst->raw_data(), src.raw_data(),
                                       src.bytes());
}

StatusOr<Tensor> DevicePlaces::CopyOut(DeviceContext* context,
                                       const Tensor& src) {
  Tensor host(src.dtype(), src.dims());
  host.set_lod(src.lod());
  PAREX_RETURN_IF_ERROR(
      context->CopyToHost(host.raw_data(), src.raw_data(), src.bytes()));
  PAREX_RETURN_IF_ERROR(context->Synchronize());
  return host;
}

std::vector<DeviceContext*> DevicePlaces::communication_streams() const {
  std::vector<DeviceContext*> streams;
  for (const auto& c : communication_) streams.push_back(c.get());
  return streams;
}

std::vector<DeviceContext*> DevicePlaces::AllStreams() const {
  std::vector<DeviceContext*> all;
  for (const auto& c : compute_) all.push_back(c.get());
  for (const auto& c : communication_) all.push_back(c.get());
  if (fetch_) all.push_back(fetch_.get());
  return all;
}

Status DevicePlaces::SynchronizeAll() const {
  for (DeviceContext* c : AllStreams()) PAREX_RETURN_IF_ERROR(c->Synchronize());
  return Status::Ok();
}

Status DevicePlaces::SynchronizeAll(const std::function<Status()>& health,
                                    long timeout_ms) const {
  const std::vector<DeviceContext*> all = AllStreams();
  if (poll_events_.size() != all.size()) {
    poll_events_.clear();
    for (DeviceContext* c : all) poll_events_.push_back(c->CreateEvent());
  }
  for (size_t i = 0; i < all.size(); ++i) {
    PAREX_RETURN_IF_ERROR(all[i]->RecordEvent(poll_events_[i].get()));
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(std::max(0L, timeout_ms));
  size_t done = 0;  // the events before it have completed
  while (true) {
    while (done < all.size() && poll_events_[done]->Query()) ++done;
    if (done == all.size()) break;
    PAREX_RETURN_IF_ERROR(health());
    if (std::chrono::steady_clock::now() > deadline) {
      std::string busy;
      for (size_t i = done; i < all.size(); ++i) {
        if (poll_events_[i]->Query()) continue;
        busy += (busy.empty() ? "" : ", ") + all[i]->place().ToString();
      }
      return Aborted("the device work of a step did not finish in " +
                     std::to_string(timeout_ms) +
                     " ms (PAREX_NCCL_TIMEOUT_MS); streams still "
                     "busy on " +
                     busy);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  // Queued copies' and kernels' own errors.
  return SynchronizeAll();
}

}  // namespace parex
