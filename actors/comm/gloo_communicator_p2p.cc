// GlooCommunicator's point-to-point messages (gloo_communicator.h): a
// header naming the tensor, then its bytes, over Gloo's unbound buffers.
#include <gloo/common/common.h>
#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <cstring>
#include <exception>

#include "actors/comm/gloo_communicator.h"
#include "base/text.h"

namespace parex {

namespace {

// A point-to-point message's header: what the payload that follows is.
constexpr uint64_t kWireMagic = 0x7032707865726170;  // "parexp2p"
constexpr uint8_t kPointToPointSlotPrefix = 0x70;
constexpr int kWireMaxRank = 8;
constexpr size_t kWireNameBytes = 64;

struct WireHeader {
  uint64_t magic = kWireMagic;
  int32_t dtype = 0;
  int32_t rank = 0;
  int64_t dims[kWireMaxRank] = {};
  char name[kWireNameBytes] = {};  // truncated, NUL-padded
};

std::string WireName(std::string_view name) {
  return std::string(name.substr(0, kWireNameBytes));
}

// Each channel's messages have slots of their own: its tags count them.
uint64_t PointToPointSlot(int channel, uint32_t tag) {
  return gloo::Slot::build(
      static_cast<uint8_t>(kPointToPointSlotPrefix + channel), tag);
}

}  // namespace

Status GlooCommunicator::CheckPeer(int peer, int channel,
                                   const std::string& what) const {
  if (peer < 0 || peer >= size_ || peer == rank_) {
    return InvalidArgument(what + ": rank " + std::to_string(peer) +
                           " is no other rank of 0.." +
                           std::to_string(size_ - 1));
  }
  if (channel < 0 || channel >= kChannels) {
    return InvalidArgument(what + ": channel " + std::to_string(channel) +
                           " is none of 0.." + std::to_string(kChannels - 1));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!interrupted_.ok()) return interrupted_;
  if (!broken_.ok()) return broken_;
  return Status::Ok();
}

Status GlooCommunicator::Transfer(bool send, void* data, size_t bytes, int peer,
                                  uint64_t slot, const std::string& what) {
  if (bytes == 0) return Status::Ok();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!interrupted_.ok()) return interrupted_;
  }
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
  try {
    buffer = context_->createUnboundBuffer(data, bytes);
    if (send) {
      buffer->send(peer, slot);
    } else {
      buffer->recv(peer, slot);
    }
  } catch (const std::exception& e) {
    return Explained(Aborted(what + ": " + e.what()));
  }
  return Explained(WaitPosted(buffer.get(), send, what));
}

Status GlooCommunicator::Explained(Status s) {
  if (s.ok() || !explain_) return s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!interrupted_.ok()) return s;  // the interrupt's reason says why
  }
  const std::string extra = explain_(
      Failure{seq_, Collective::kAllReduce, "", IsGlooTimeout(s.message())});
  if (extra.empty()) return s;
  Status explained(s.code(), s.message() + "; " + extra);
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_.message() == s.message()) broken_ = explained;
  return explained;
}

Status GlooCommunicator::PostSend(std::string_view name, const Tensor& tensor,
                                  int to, int channel, bool copy,
                                  PendingSend* p) {
  p->what = "send '" + ShownName(name) + "' from " + rank_names_[rank_] +
            " to " +
            (to >= 0 && to < size_ ? rank_names_[to] : std::string("?"));
  PAREX_RETURN_IF_ERROR(CheckPeer(to, channel, p->what));
  if (!tensor.defined() || !tensor.place().is_cpu() ||
      tensor.rank() > kWireMaxRank) {
    return InvalidArgument(p->what + ": needs a defined host tensor of rank " +
                           "at most " + std::to_string(kWireMaxRank));
  }
  WireHeader header;
  header.dtype = static_cast<int32_t>(tensor.dtype());
  header.rank = tensor.rank();
  for (int d = 0; d < tensor.rank(); ++d) header.dims[d] = tensor.dim(d);
  const std::string wire_name = WireName(name);
  std::memcpy(header.name, wire_name.data(), wire_name.size());
  p->header.assign(reinterpret_cast<const char*>(&header),
                   reinterpret_cast<const char*>(&header) + sizeof(header));
  p->bytes = copy ? tensor.Clone() : tensor;
  const uint32_t tag = 2 * sent_[channel * size_ + to]++;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!interrupted_.ok()) return interrupted_.WithContext(p->what);
  }
  // Both posted at once: the receiver reads the header and then the bytes,
  // and the bytes need not wait for the header's round trip.
  try {
    p->header_buffer =
        context_->createUnboundBuffer(p->header.data(), p->header.size());
    p->header_buffer->send(to, PointToPointSlot(channel, tag));
    if (p->bytes.bytes() > 0) {
      p->bytes_buffer =
          context_->createUnboundBuffer(p->bytes.raw_data(), p->bytes.bytes());
      p->bytes_buffer->send(to, PointToPointSlot(channel, tag + 1));
    }
  } catch (const std::exception& e) {
    return Explained(Aborted(p->what + ": " + e.what()));
  }
  return Status::Ok();
}

Status GlooCommunicator::WaitSent(PendingSend* p) {
  PAREX_RETURN_IF_ERROR(
      Explained(WaitPosted(p->header_buffer.get(), true, p->what)));
  if (p->bytes_buffer == nullptr) return Status::Ok();
  return Explained(WaitPosted(p->bytes_buffer.get(), true, p->what));
}

Status GlooCommunicator::Send(std::string_view name, const Tensor& tensor,
                              int to, int channel) {
  PendingSend p;
  PAREX_RETURN_IF_ERROR(
      PostSend(name, tensor, to, channel, /*copy=*/false, &p));
  return WaitSent(&p);
}

Status GlooCommunicator::SendAsync(std::string_view name, const Tensor& tensor,
                                   int to, int channel) {
  auto p = std::make_unique<PendingSend>();
  PAREX_RETURN_IF_ERROR(
      PostSend(name, tensor, to, channel, /*copy=*/true, p.get()));
  pending_.push_back(std::move(p));
  return Status::Ok();
}

Status GlooCommunicator::WaitPosted(gloo::transport::UnboundBuffer* buffer,
                                    bool send, const std::string& what) {
  std::string error;
  bool done = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!interrupted_.ok()) return interrupted_.WithContext(what);
    waiting_ = buffer;
  }
  try {
    done = send ? buffer->waitSend(timeout_) : buffer->waitRecv(timeout_);
  } catch (const std::exception& e) {
    error = e.what();
  }
  Status interrupted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiting_ = nullptr;
    interrupted = interrupted_;
  }
  if (!interrupted.ok()) return interrupted.WithContext(what);
  if (done && error.empty()) return Status::Ok();
  Status s =
      Aborted(what + ": " + (error.empty() ? std::string("aborted") : error) +
              (IsGlooTimeout(error) ? " (no message within the collective "
                                      "timeout)"
                                    : ""));
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_.ok()) broken_ = s;
  return s;
}

Status GlooCommunicator::FlushSends(size_t keep) {
  while (pending_.size() > keep) {
    std::unique_ptr<PendingSend> p = std::move(pending_.front());
    pending_.pop_front();
    PAREX_RETURN_IF_ERROR(WaitSent(p.get()));
  }
  return Status::Ok();
}

Status GlooCommunicator::Recv(std::string_view name, Tensor* tensor, int from,
                              int channel) {
  const std::string peer =
      from >= 0 && from < size_ ? rank_names_[from] : std::string("?");
  const std::string what = "recv '" + ShownName(name) + "' on " +
                           rank_names_[rank_] + " from " + peer;
  PAREX_RETURN_IF_ERROR(CheckPeer(from, channel, what));
  WireHeader header;
  const uint32_t tag = 2 * received_[channel * size_ + from]++;
  PAREX_RETURN_IF_ERROR(Transfer(false, &header, sizeof(header), from,
                                 PointToPointSlot(channel, tag), what));
  const std::string got(header.name, strnlen(header.name, kWireNameBytes));
  if (header.magic != kWireMagic) {
    return Aborted(what + ": " + peer + " sent no parex tensor header");
  }
  if (got != WireName(name)) {
    return Aborted(what + ": " + peer + " sent '" + Excerpt(got) +
                   "' instead (the two ranks' messages are out of order)");
  }
  const auto dtype = static_cast<DType>(header.dtype);
  if (header.rank < 0 || header.rank > kWireMaxRank ||
      !IsElementType(header.dtype) || SizeOf(dtype) == 0) {
    return Aborted(what + ": " + peer + " sent a header with dtype " +
                   std::to_string(header.dtype) + " and rank " +
                   std::to_string(header.rank));
  }
  Dims dims(header.dims, header.dims + header.rank);
  // TryAllocate refuses negative extents and sizes that overflow or that no
  // allocation can hold, before any payload is read.
  PAREX_RETURN_IF_ERROR(tensor->TryAllocate(dtype, dims)
                            .WithContext(what + ": " + peer + "'s header"));
  return Transfer(false, tensor->raw_data(), tensor->bytes(), from,
                  PointToPointSlot(channel, tag + 1), what);
}

}  // namespace parex
