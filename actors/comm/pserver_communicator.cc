#include "actors/comm/pserver_communicator.h"

#include <cstring>
#include <utility>

#include "base/check.h"
#include "graph/ir/place_group.h"

namespace parex {
namespace {

template <typename T>
void AddInto(const Tensor& from, Tensor* sum) {
  const T* a = from.data<T>();
  T* s = sum->data<T>();
  const int64_t n = sum->numel();
  for (int64_t i = 0; i < n; ++i) s[i] += a[i];
}

}  // namespace

PserverCommunicator::PserverCommunicator(
    std::vector<Place> local_places, std::shared_ptr<Communicator> cross,
    std::vector<std::string> nodes, bool pserver, std::vector<int> trainers,
    std::map<std::string, PserverShard> shards)
    : local_(std::move(local_places)),
      cross_(std::move(cross)),
      nodes_(std::move(nodes)),
      pserver_(pserver),
      trainers_(std::move(trainers)),
      shards_(std::move(shards)) {
  PAREX_CHECK(cross_ != nullptr && cross_->local_size() == 1);
  PAREX_CHECK(!pserver_ || local_.world_size() == 1);
}

StatusOr<const PserverShard*> PserverCommunicator::ShardOf(
    std::string_view name) const {
  const auto it = shards_.find(std::string(name));
  if (it == shards_.end() || it->second.ranks.empty()) {
    return Internal("'" + std::string(name) +
                    "' lives on no pserver (the placement and the graph "
                    "disagree)");
  }
  return &it->second;
}

int PserverCommunicator::BlockOfThisNode(const PserverShard& shard) const {
  const int me = cross_->first_local_rank();
  for (size_t b = 0; b < shard.ranks.size(); ++b) {
    if (shard.ranks[b] == me) return static_cast<int>(b);
  }
  return -1;
}

Status PserverCommunicator::AllReduce(std::string_view name,
                                      TensorGroups groups) {
  (void)groups;
  return FailedPrecondition(
      "all_reduce '" + std::string(name) +
      "': parameter-server training has no all-reduce across nodes (a "
      "synchronised batch norm, say); train it in collective mode");
}

Status PserverCommunicator::AllGather(std::string_view name,
                                      const PlaceTensors& inputs,
                                      const PlaceTensors& outputs) {
  (void)inputs;
  (void)outputs;
  return FailedPrecondition("all_gather '" + std::string(name) +
                            "': parameter-server training sends sparse rows "
                            "to their pservers, not to every node");
}

Status PserverCommunicator::Reduce(std::string_view name, TensorGroups groups,
                                   int root) {
  (void)root;  // the shards say who receives
  for (const PlaceTensors& places : groups) {
    if (pserver_) {
      PAREX_RETURN_IF_ERROR(RecvGradient(name, places[0]));
    } else {
      PAREX_RETURN_IF_ERROR(SendGradient(name, places));
    }
  }
  return Status::Ok();
}

Status PserverCommunicator::Broadcast(std::string_view name,
                                      TensorGroups groups, int root) {
  (void)root;
  for (const PlaceTensors& places : groups) {
    if (pserver_) {
      PAREX_RETURN_IF_ERROR(SendParameter(name, *places[0]));
    } else {
      PAREX_RETURN_IF_ERROR(RecvParameter(name, places));
    }
  }
  return Status::Ok();
}

Status PserverCommunicator::SendGradient(std::string_view name,
                                         const PlaceTensors& places) {
  PAREX_ASSIGN_OR_RETURN(const PserverShard* shard, ShardOf(name));
  if (places.size() > 1) {
    PAREX_RETURN_IF_ERROR(local_.Reduce(name, places, 0));
  }
  const Tensor& sum = *places[0];
  const int blocks = static_cast<int>(shard->ranks.size());
  sent_ += static_cast<int64_t>(sum.bytes());
  if (blocks == 1) return cross_->Send(name, sum, shard->ranks[0]);
  if (sum.rank() < 1 || sum.dim(0) != shard->rows) {
    return InvalidArgument("send '" + std::string(name) + "': gradient " +
                           DimsToString(sum.dims()) + " does not have the " +
                           std::to_string(shard->rows) +
                           " rows its parameter is split by");
  }
  for (int b = 0; b < blocks; ++b) {
    const auto [begin, end] = RowBlock(shard->rows, b, blocks);
    PAREX_RETURN_IF_ERROR(
        cross_->Send(name, sum.Slice(begin, end), shard->ranks[b]));
  }
  return Status::Ok();
}

Status PserverCommunicator::RecvGradient(std::string_view name, Tensor* sum) {
  PAREX_ASSIGN_OR_RETURN(const PserverShard* shard, ShardOf(name));
  for (size_t t = 0; t < trainers_.size(); ++t) {
    if (t == 0) {
      PAREX_RETURN_IF_ERROR(cross_->Recv(name, sum, trainers_[t]));
      received_ += static_cast<int64_t>(sum->bytes());
      continue;
    }
    PAREX_RETURN_IF_ERROR(cross_->Recv(name, &scratch_, trainers_[t]));
    received_ += static_cast<int64_t>(scratch_.bytes());
    const std::string what = "recv '" + std::string(name) + "' from " +
                             "node '" + nodes_[trainers_[t]] + "'";
    if (scratch_.dtype() != sum->dtype() || scratch_.dims() != sum->dims()) {
      return InvalidArgument(what + ": " + DTypeName(scratch_.dtype()) +
                             DimsToString(scratch_.dims()) + ", but the " +
                             "first trainer sent " + DTypeName(sum->dtype()) +
                             DimsToString(sum->dims()));
    }
    if (sum->dtype() == DType::kFP32) {
      AddInto<float>(scratch_, sum);
    } else if (sum->dtype() == DType::kFP64) {
      AddInto<double>(scratch_, sum);
    } else {
      return InvalidArgument(what + ": a " + DTypeName(sum->dtype()) +
                             " gradient (float32 or float64 are summed)");
    }
  }
  (void)shard;
  return Status::Ok();
}

Status PserverCommunicator::SendParameter(std::string_view name,
                                          const Tensor& param) {
  PAREX_ASSIGN_OR_RETURN(const PserverShard* shard, ShardOf(name));
  (void)shard;
  for (int t : trainers_) {
    PAREX_RETURN_IF_ERROR(cross_->Send(name, param, t));
    sent_ += static_cast<int64_t>(param.bytes());
  }
  return Status::Ok();
}

Status PserverCommunicator::RecvParameter(std::string_view name,
                                          const PlaceTensors& places) {
  PAREX_ASSIGN_OR_RETURN(const PserverShard* shard, ShardOf(name));
  const int blocks = static_cast<int>(shard->ranks.size());
  for (int b = 0; b < blocks; ++b) {
    PAREX_RETURN_IF_ERROR(cross_->Recv(name, &scratch_, shard->ranks[b]));
    received_ += static_cast<int64_t>(scratch_.bytes());
    const auto [begin, end] = RowBlock(shard->rows, b, blocks);
    for (size_t p = 0; p < places.size(); ++p) {
      Tensor* dst = places[p];
      if (p > 0 && dst == places[0]) continue;
      const std::string what = "recv '" + std::string(name) + "' from " +
                               "node '" + nodes_[shard->ranks[b]] + "'";
      if (blocks == 1) {
        if (dst->dtype() != scratch_.dtype() ||
            dst->dims() != scratch_.dims()) {
          return InvalidArgument(
              what + ": " + DTypeName(scratch_.dtype()) +
              DimsToString(scratch_.dims()) + " for a parameter of " +
              DTypeName(dst->dtype()) + DimsToString(dst->dims()));
        }
        std::memcpy(dst->raw_data(), scratch_.raw_data(), scratch_.bytes());
        continue;
      }
      if (dst->rank() < 1 || dst->dim(0) != shard->rows) {
        return InvalidArgument(what + ": the parameter " +
                               DimsToString(dst->dims()) + " does not have " +
                               std::to_string(shard->rows) + " rows");
      }
      Tensor rows = dst->Slice(begin, end);
      if (rows.dtype() != scratch_.dtype() || rows.dims() != scratch_.dims()) {
        return InvalidArgument(what + ": rows " + DTypeName(scratch_.dtype()) +
                               DimsToString(scratch_.dims()) + " for block " +
                               DimsToString(rows.dims()) + " of " +
                               DTypeName(dst->dtype()));
      }
      std::memcpy(rows.raw_data(), scratch_.raw_data(), scratch_.bytes());
    }
  }
  return Status::Ok();
}

}  // namespace parex
