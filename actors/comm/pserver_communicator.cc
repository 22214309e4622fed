#include "actors/comm/pserver_communicator.h"

#include <algorithm>
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
    std::map<std::string, PserverShard> shards, int max_staleness)
    : local_(std::move(local_places)),
      cross_(std::move(cross)),
      nodes_(std::move(nodes)),
      pserver_(pserver),
      trainers_(std::move(trainers)),
      shards_(std::move(shards)),
      max_staleness_(max_staleness) {
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
  PAREX_RETURN_IF_ERROR(BeginSends(name));
  for (int t : trainers_) {
    PAREX_RETURN_IF_ERROR(Post(name, param, t));
    sent_ += static_cast<int64_t>(param.bytes());
  }
  return Status::Ok();
}

Status PserverCommunicator::RecvParameter(std::string_view name,
                                          const PlaceTensors& places) {
  PAREX_ASSIGN_OR_RETURN(const PserverShard* shard, ShardOf(name));
  if (Defer(name, &places, nullptr)) return Status::Ok();
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

namespace parex {
namespace {

// Bytes of one row of `t` (its dims past the first).
int64_t RowBytes(const Tensor& t) {
  return t.dim(0) == 0 ? 0 : static_cast<int64_t>(t.bytes()) / t.dim(0);
}

Dims WithRows(Dims dims, int64_t rows) {
  dims[0] = rows;
  return dims;
}

}  // namespace

Status PserverCommunicator::ReduceRows(std::string_view name,
                                       const std::vector<Variable*>& places) {
  PAREX_ASSIGN_OR_RETURN(const PserverShard* shard, ShardOf(name));
  return pserver_ ? RecvRows(name, places[0], *shard)
                  : SendRows(name, places, *shard);
}

Status PserverCommunicator::SendRows(std::string_view name,
                                     const std::vector<Variable*>& places,
                                     const PserverShard& shard) {
  const std::string what = "send rows of '" + std::string(name) + "'";
  const SelectedRows* first = nullptr;
  for (size_t p = 0; p < places.size(); ++p) {
    const Variable* v = places[p];
    if (!v->IsSelectedRows()) {
      return InvalidArgument(what + ": local place " + std::to_string(p) +
                             " holds no rows (a dense gradient)");
    }
    const SelectedRows& s = *v->GetSelectedRows();
    if (first == nullptr) first = &s;
    if (s.value.rank() < 1 ||
        s.value.dim(0) != static_cast<int64_t>(s.rows.size()) ||
        s.value.dtype() != first->value.dtype() ||
        WithRows(s.value.dims(), 0) != WithRows(first->value.dims(), 0)) {
      return InvalidArgument(what + ": local place " + std::to_string(p) +
                             "'s rows " + DimsToString(s.value.dims()) +
                             " do not match");
    }
  }
  const int blocks = static_cast<int>(shard.ranks.size());
  for (int b = 0; b < blocks; ++b) {
    const auto [begin, end] = RowBlock(shard.rows, b, blocks);
    std::vector<int64_t> ids;
    std::vector<const char*> rows;
    int64_t row_bytes = 0;
    for (const Variable* v : places) {
      const SelectedRows& s = *v->GetSelectedRows();
      row_bytes = RowBytes(s.value);
      for (size_t i = 0; i < s.rows.size(); ++i) {
        const int64_t id = s.rows[i];
        if (id < 0 || id >= shard.rows) {
          return InvalidArgument(what + ": row " + std::to_string(id) +
                                 " is outside the parameter's " +
                                 std::to_string(shard.rows) + " rows");
        }
        if (id < begin || id >= end) continue;
        ids.push_back(id - begin);
        rows.push_back(static_cast<const char*>(s.value.raw_data()) +
                       i * row_bytes);
      }
    }
    const int64_t k = static_cast<int64_t>(ids.size());
    ids_.Allocate(DType::kInt64, {k});
    if (k > 0) std::memcpy(ids_.raw_data(), ids.data(), k * sizeof(int64_t));
    scratch_.Allocate(first->value.dtype(), WithRows(first->value.dims(), k));
    for (int64_t i = 0; i < k; ++i) {
      std::memcpy(static_cast<char*>(scratch_.raw_data()) + i * row_bytes,
                  rows[i], row_bytes);
    }
    PAREX_RETURN_IF_ERROR(cross_->Send(name, ids_, shard.ranks[b]));
    PAREX_RETURN_IF_ERROR(cross_->Send(name, scratch_, shard.ranks[b]));
    sent_ += static_cast<int64_t>(ids_.bytes() + scratch_.bytes());
  }
  return Status::Ok();
}

Status PserverCommunicator::RecvRows(std::string_view name, Variable* grad,
                                     const PserverShard& shard) {
  const int block = BlockOfThisNode(shard);
  const int blocks = static_cast<int>(shard.ranks.size());
  const auto [begin, end] = RowBlock(shard.rows, std::max(block, 0), blocks);
  const int64_t height = end - begin;
  std::vector<int64_t> rows;
  std::vector<Tensor> values(trainers_.size());
  for (size_t t = 0; t < trainers_.size(); ++t) {
    const std::string what =
        "recv rows of '" + std::string(name) + "' from " + From(trainers_[t]);
    PAREX_RETURN_IF_ERROR(cross_->Recv(name, &ids_, trainers_[t]));
    PAREX_RETURN_IF_ERROR(cross_->Recv(name, &values[t], trainers_[t]));
    received_ += static_cast<int64_t>(ids_.bytes() + values[t].bytes());
    if (ids_.dtype() != DType::kInt64 || ids_.rank() != 1 ||
        values[t].rank() < 1 || values[t].dim(0) != ids_.dim(0) ||
        values[t].dtype() != values[0].dtype() ||
        WithRows(values[t].dims(), 0) != WithRows(values[0].dims(), 0)) {
      return InvalidArgument(what + ": ids " + DimsToString(ids_.dims()) +
                             " and values " + DimsToString(values[t].dims()) +
                             " do not make rows of the first trainer's shape");
    }
    for (int64_t i = 0; i < ids_.dim(0); ++i) {
      const int64_t id = ids_.data<int64_t>()[i];
      if (id < 0 || id >= height) {
        return InvalidArgument(what + ": row " + std::to_string(id) +
                               " is outside this block's " +
                               std::to_string(height) + " rows");
      }
      rows.push_back(id);
    }
  }
  SelectedRows* out = grad->GetMutableSelectedRows();
  out->height = height;
  out->rows = rows;
  PAREX_RETURN_IF_ERROR(out->value.TryAllocate(
      values[0].dtype(),
      WithRows(values[0].dims(), static_cast<int64_t>(rows.size()))));
  char* at = static_cast<char*>(out->value.raw_data());
  for (const Tensor& v : values) {
    if (v.bytes() > 0) std::memcpy(at, v.raw_data(), v.bytes());
    at += v.bytes();
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  touched_[shard.param] = std::move(rows);
  return Status::Ok();
}

Status PserverCommunicator::BroadcastRows(
    std::string_view name, const std::vector<Variable*>& places) {
  PAREX_ASSIGN_OR_RETURN(const PserverShard* shard, ShardOf(name));
  const int blocks = static_cast<int>(shard->ranks.size());
  if (pserver_) {
    PAREX_RETURN_IF_ERROR(BeginSends(name));
    const Tensor& param = *places[0]->GetTensor();
    const std::vector<int64_t>& rows = touched_[shard->param];
    const int64_t k = static_cast<int64_t>(rows.size());
    const int64_t row_bytes = RowBytes(param);
    ids_.Allocate(DType::kInt64, {k});
    scratch_.Allocate(param.dtype(), WithRows(param.dims(), k));
    for (int64_t i = 0; i < k; ++i) {
      if (rows[i] >= param.dim(0)) {
        return Internal("send rows of '" + std::string(name) + "': row " +
                        std::to_string(rows[i]) + " of a block of " +
                        std::to_string(param.dim(0)));
      }
      ids_.data<int64_t>()[i] = rows[i];
      std::memcpy(static_cast<char*>(scratch_.raw_data()) + i * row_bytes,
                  static_cast<const char*>(param.raw_data()) +
                      rows[i] * row_bytes,
                  row_bytes);
    }
    for (int t : trainers_) {
      PAREX_RETURN_IF_ERROR(Post(name, ids_, t));
      PAREX_RETURN_IF_ERROR(Post(name, scratch_, t));
      sent_ += static_cast<int64_t>(ids_.bytes() + scratch_.bytes());
    }
    return Status::Ok();
  }
  if (Defer(name, nullptr, &places)) return Status::Ok();
  return RecvParameterRows(name, places, *shard);
}

Status PserverCommunicator::RecvParameterRows(
    std::string_view name, const std::vector<Variable*>& places,
    const PserverShard& shard_ref) {
  const PserverShard* shard = &shard_ref;
  const int blocks = static_cast<int>(shard->ranks.size());
  for (int b = 0; b < blocks; ++b) {
    const auto [begin, end] = RowBlock(shard->rows, b, blocks);
    const std::string what = "recv rows of '" + std::string(name) + "' from " +
                             From(shard->ranks[b]);
    PAREX_RETURN_IF_ERROR(cross_->Recv(name, &ids_, shard->ranks[b]));
    PAREX_RETURN_IF_ERROR(cross_->Recv(name, &scratch_, shard->ranks[b]));
    received_ += static_cast<int64_t>(ids_.bytes() + scratch_.bytes());
    for (size_t p = 0; p < places.size(); ++p) {
      Tensor* dst = places[p]->GetMutableTensor();
      if (ids_.dtype() != DType::kInt64 || ids_.rank() != 1 ||
          scratch_.rank() < 1 || scratch_.dim(0) != ids_.dim(0) ||
          dst->rank() < 1 || dst->dim(0) != shard->rows ||
          scratch_.dtype() != dst->dtype() ||
          WithRows(scratch_.dims(), 0) != WithRows(dst->dims(), 0)) {
        return InvalidArgument(what + ": ids " + DimsToString(ids_.dims()) +
                               " and rows " + DimsToString(scratch_.dims()) +
                               " for a parameter of " +
                               DimsToString(dst->dims()));
      }
      const int64_t row_bytes = RowBytes(*dst);
      for (int64_t i = 0; i < ids_.dim(0); ++i) {
        const int64_t id = ids_.data<int64_t>()[i];
        if (id < 0 || id >= end - begin) {
          return InvalidArgument(what + ": row " + std::to_string(id) +
                                 " is outside its block's " +
                                 std::to_string(end - begin) + " rows");
        }
        std::memcpy(static_cast<char*>(dst->raw_data()) +
                        (begin + id) * row_bytes,
                    static_cast<const char*>(scratch_.raw_data()) +
                        i * row_bytes,
                    row_bytes);
      }
    }
  }
  return Status::Ok();
}

}  // namespace parex

namespace parex {

bool PserverCommunicator::Defer(std::string_view name,
                                const PlaceTensors* dense,
                                const std::vector<Variable*>* rows) {
  if (max_staleness_ == 0) return false;
  const std::string key(name);
  if (std::find(order_.begin(), order_.end(), key) == order_.end()) {
    order_.push_back(key);
  }
  int64_t& deferred = deferred_[key];
  if (deferred >= max_staleness_) return false;
  ++deferred;
  if (dense != nullptr) dense_targets_[key] = *dense;
  if (rows != nullptr) row_targets_[key] = *rows;
  return true;
}

Status PserverCommunicator::BeginSends(std::string_view name) {
  if (max_staleness_ == 0) return Status::Ok();
  // A new step starts with the first parameter of the order: the sends of
  // the steps before the last K + 1 have been received by now.
  const std::string key(name);
  if (order_.empty()) order_.push_back(key);
  if (order_[0] != key) return Status::Ok();
  posted_per_step_.push_back(0);
  while (posted_per_step_.size() > static_cast<size_t>(max_staleness_) + 1) {
    posted_ -= posted_per_step_.front();
    posted_per_step_.pop_front();
  }
  return cross_->FlushSends(posted_);
}

Status PserverCommunicator::Post(std::string_view name, const Tensor& tensor,
                                 int to) {
  if (max_staleness_ == 0) return cross_->Send(name, tensor, to);
  PAREX_RETURN_IF_ERROR(cross_->SendAsync(name, tensor, to));
  ++posted_per_step_.back();
  ++posted_;
  return Status::Ok();
}

Status PserverCommunicator::Drain() {
  if (max_staleness_ == 0) return Status::Ok();
  if (pserver_) {
    posted_per_step_.clear();
    posted_ = 0;
    return cross_->FlushSends(0);
  }
  // Every deferred step's parameters, in the pservers' send order (none is
  // deferred again meanwhile).
  const int64_t steps = order_.empty() ? 0 : deferred_[order_[0]];
  for (const std::string& name : order_) deferred_[name] = max_staleness_;
  for (int64_t s = 0; s < steps; ++s) {
    for (const std::string& name : order_) {
      PAREX_ASSIGN_OR_RETURN(const PserverShard* shard, ShardOf(name));
      if (row_targets_.count(name) != 0) {
        PAREX_RETURN_IF_ERROR(
            RecvParameterRows(name, row_targets_[name], *shard));
      } else {
        PAREX_RETURN_IF_ERROR(RecvParameter(name, dense_targets_[name]));
      }
    }
  }
  deferred_.clear();
  return Status::Ok();
}

}  // namespace parex
