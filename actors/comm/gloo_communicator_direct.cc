// GlooCommunicator's small all-reduce (gloo_communicator.h,
// AllReduceDirect): every rank's bytes to every other rank at once, summed
// in rank order on each.
#include <gloo/common/common.h>
#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <cstring>
#include <exception>
#include <memory>

#include "actors/comm/gloo_communicator.h"

namespace parex {
namespace {

// Slots of their own (point-to-point messages use 0x70 + channel), one tag
// per call: every rank numbers its calls alike.
constexpr uint8_t kDirectSlotPrefix = 0x7d;

// out = ((v[0] + v[1]) + v[2]) + ... elementwise, v[r] rank r's values.
template <typename T>
void SumInRankOrder(const std::vector<const char*>& values, int64_t count,
                    char* out) {
  T* o = reinterpret_cast<T*>(out);
  const T* first = reinterpret_cast<const T*>(values[0]);
  for (int64_t i = 0; i < count; ++i) o[i] = first[i];
  for (size_t r = 1; r < values.size(); ++r) {
    const T* v = reinterpret_cast<const T*>(values[r]);
    for (int64_t i = 0; i < count; ++i) o[i] += v[i];
  }
}

// out = the rank-order sum of `values` (each rank's `count` elements).
void SumDirect(DType dtype, const std::vector<const char*>& values,
               int64_t count, char* out) {
  switch (dtype) {
    case DType::kFP32:
      SumInRankOrder<float>(values, count, out);
      break;
    case DType::kFP64:
      SumInRankOrder<double>(values, count, out);
      break;
    case DType::kInt32:
      SumInRankOrder<int32_t>(values, count, out);
      break;
    default:  // RunCall let only the summable dtypes through
      SumInRankOrder<int64_t>(values, count, out);
      break;
  }
}

}  // namespace

Status GlooCommunicator::ExchangeDirect(Collective collective,
                                        std::string_view name, size_t bytes) {
  const std::string what =
      std::string(CollectiveName(collective)) + " '" + ShownName(name) + "'";
  try {
    const uint64_t slot =
        gloo::Slot::build(kDirectSlotPrefix, static_cast<uint32_t>(seq_));
    for (int r = 0; r < size_; ++r) {
      if (r != rank_)
        direct_recv_->recv(r, slot, r * direct_max_bytes(), bytes);
    }
    for (int r = 0; r < size_; ++r) {
      if (r != rank_) direct_send_->send(r, slot, 0, bytes);
    }
  } catch (const std::exception& e) {
    return Failed(collective, name, e.what());
  }
  for (int r = 0; r < size_ - 1; ++r) {
    Status s = WaitPosted(direct_recv_.get(), false, what);
    if (!s.ok()) return Failed(collective, name, s.message());
  }
  for (int r = 0; r < size_ - 1; ++r) {
    Status s = WaitPosted(direct_send_.get(), true, what);
    if (!s.ok()) return Failed(collective, name, s.message());
  }
  return Status::Ok();
}

Status GlooCommunicator::AllReduceDirect(Collective collective,
                                         std::string_view name,
                                         TensorGroups groups, int root,
                                         DType dtype, int64_t count) {
  const size_t bytes = static_cast<size_t>(count) * SizeOf(dtype);
  try {
    if (direct_send_ == nullptr) {
      direct_mine_.resize(direct_max_bytes());
      direct_peers_.resize(direct_max_bytes() * size_);
      direct_send_ = context_->createUnboundBuffer(direct_mine_.data(),
                                                   direct_mine_.size());
      direct_recv_ = context_->createUnboundBuffer(direct_peers_.data(),
                                                   direct_peers_.size());
    }
  } catch (const std::exception& e) {
    return Failed(collective, name, e.what());
  }
  size_t at = 0;
  for (const PlaceTensors& group : groups) {
    const size_t b = group[0]->bytes();
    if (b > 0) std::memcpy(direct_mine_.data() + at, group[0]->raw_data(), b);
    at += b;
  }
  PAREX_RETURN_IF_ERROR(ExchangeDirect(collective, name, bytes));
  if (collective == Collective::kReduce && rank_ != root) return Status::Ok();
  std::vector<const char*> values(size_);
  for (int r = 0; r < size_; ++r) {
    values[r] = r == rank_ ? direct_mine_.data()
                           : direct_peers_.data() + r * direct_max_bytes();
  }
  // The sum goes into this rank's slot of direct_peers_ (unused), then out.
  char* sum = direct_peers_.data() + rank_ * direct_max_bytes();
  SumDirect(dtype, values, count, sum);
  at = 0;
  for (const PlaceTensors& group : groups) {
    const size_t b = group[0]->bytes();
    if (b > 0) std::memcpy(group[0]->raw_data(), sum + at, b);
    at += b;
  }
  return Status::Ok();
}

}  // namespace parex
