#include "actors/executor/device_places.h"

#include <cstring>

namespace parex {

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
    PAREX_ASSIGN_OR_RETURN(d->communication_, CreateDeviceContext(places[0]));
    PAREX_ASSIGN_OR_RETURN(d->fetch_, CreateDeviceContext(places[0]));
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
  Staging& staging = staging_[{place, name}];
  const size_t bytes = src.bytes();
  if (staging.data == nullptr || staging.bytes < bytes) {
    DeviceContext* context = compute_[place].get();
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
  return compute_[place]->CopyFromHost(dst->raw_data(), staging.data, bytes);
}

Status DevicePlaces::StageFeed(int place, const std::string& name,
                               const Tensor& src) {
  auto it = staging_.find({place, name});
  if (it == staging_.end() || it->second.bytes < src.bytes()) {
    return FailedPrecondition("no staging buffer of " +
                              std::to_string(src.bytes()) + " bytes");
  }
  if (src.bytes() > 0)
    std::memcpy(it->second.data, src.raw_data(), src.bytes());
  return Status::Ok();
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

Status DevicePlaces::SynchronizeAll() const {
  for (const auto& c : compute_) PAREX_RETURN_IF_ERROR(c->Synchronize());
  if (communication_) PAREX_RETURN_IF_ERROR(communication_->Synchronize());
  if (fetch_) PAREX_RETURN_IF_ERROR(fetch_->Synchronize());
  return Status::Ok();
}

}  // namespace parex
