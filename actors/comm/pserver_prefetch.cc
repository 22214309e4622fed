// PserverCommunicator's prefetch (pserver_communicator.h): a trainer asks
// the pservers for the rows of a table its places' lookups read, and a
// pserver answers every trainer from its block.
#include <algorithm>
#include <cstring>

#include "actors/comm/pserver_communicator.h"
#include "graph/ir/place_group.h"

namespace parex {
namespace {

// Elements of one row of a tensor of `dims`.
int64_t RowElements(const Dims& dims) {
  int64_t n = 1;
  for (size_t d = 1; d < dims.size(); ++d) n *= dims[d];
  return n;
}

int64_t IdOf(const Tensor& ids, int64_t i) {
  return ids.dtype() == DType::kInt32 ? ids.data<int32_t>()[i]
                                      : ids.data<int64_t>()[i];
}

}  // namespace

Status PserverCommunicator::Prefetch(
    std::string_view name, const std::vector<std::vector<const Tensor*>>& ids,
    const std::vector<Variable*>& tables) {
  PAREX_ASSIGN_OR_RETURN(const PserverShard* shard, ShardOf(name));
  if (shard->dims.size() < 2) {
    return InvalidArgument("prefetch '" + std::string(name) +
                           "': a table has rows of at least one element, not "
                           "dims " +
                           DimsToString(shard->dims));
  }
  if (!pserver_) return RequestRows(name, ids, tables, *shard);
  const Tensor* block = tables.size() == 1 && tables[0] != nullptr
                            ? tables[0]->GetTensor()
                            : nullptr;
  if (block == nullptr || !block->defined()) {
    return FailedPrecondition("prefetch '" + std::string(name) +
                              "': this pserver holds no block of it");
  }
  return ServeRows(name, *block, *shard);
}

Status PserverCommunicator::CollectWanted(
    const std::vector<std::vector<const Tensor*>>& ids,
    const PserverShard& shard, const std::string& what) {
  std::vector<int64_t>& wanted = wanted_;  // kept: no allocation a step
  wanted.clear();
  for (size_t p = 0; p < ids.size(); ++p) {
    for (const Tensor* t : ids[p]) {
      if (t == nullptr || !t->defined() ||
          (t->dtype() != DType::kInt64 && t->dtype() != DType::kInt32)) {
        return InvalidArgument(what + ": local place " + std::to_string(p) +
                               " has ids that are no int64 or int32 tensor");
      }
      for (int64_t i = 0, n = t->numel(); i < n; ++i) {
        const int64_t id = IdOf(*t, i);
        if (id >= 0 && id < shard.rows) wanted.push_back(id);
      }
    }
  }
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  return Status::Ok();
}

Status PserverCommunicator::AskBlocks(std::string_view name,
                                      const PserverShard& shard,
                                      const std::string& what) {
  const int blocks = static_cast<int>(shard.ranks.size());
  first_.assign(blocks + 1, 0);
  for (int b = 0; b < blocks; ++b) {
    const auto [begin, end] = RowBlock(shard.rows, b, blocks);
    const auto from = std::lower_bound(wanted_.begin(), wanted_.end(), begin);
    const auto to = std::lower_bound(from, wanted_.end(), end);
    first_[b] = static_cast<size_t>(from - wanted_.begin());
    first_[b + 1] = static_cast<size_t>(to - wanted_.begin());
    const int64_t k = static_cast<int64_t>(to - from);
    ids_.Allocate(DType::kInt64, {k});
    for (int64_t i = 0; i < k; ++i) ids_.data<int64_t>()[i] = from[i] - begin;
    PAREX_RETURN_IF_ERROR(
        cross_->Send(name, ids_, shard.ranks[b], kPrefetch).WithContext(what));
    sent_ += static_cast<int64_t>(ids_.bytes());
  }
  return Status::Ok();
}

Status PserverCommunicator::ReceiveBlocks(std::string_view name,
                                          const PserverShard& shard,
                                          const std::string& what,
                                          SelectedRows* out) {
  Dims dims = shard.dims;
  dims[0] = static_cast<int64_t>(wanted_.size());
  DType dtype = DType::kUndefined;
  for (size_t b = 0; b < shard.ranks.size(); ++b) {
    PAREX_RETURN_IF_ERROR(
        cross_->Recv(name, &scratch_, shard.ranks[b], kPrefetch)
            .WithContext(what));
    received_ += static_cast<int64_t>(scratch_.bytes());
    Dims want = shard.dims;
    want[0] = static_cast<int64_t>(first_[b + 1] - first_[b]);
    if (scratch_.dims() != want ||
        (dtype != DType::kUndefined && scratch_.dtype() != dtype)) {
      return InvalidArgument(what + ": " + From(shard.ranks[b]) +
                             " sent rows " + DimsToString(scratch_.dims()) +
                             " for " + DimsToString(want));
    }
    if (dtype == DType::kUndefined) {
      dtype = scratch_.dtype();
      PAREX_RETURN_IF_ERROR(out->value.TryAllocate(dtype, dims));
    }
    if (scratch_.bytes() > 0) {
      const size_t row_bytes = RowElements(dims) * SizeOf(dtype);
      std::memcpy(
          static_cast<char*>(out->value.raw_data()) + first_[b] * row_bytes,
          scratch_.raw_data(), scratch_.bytes());
    }
  }
  out->rows = wanted_;
  out->height = shard.rows;
  return Status::Ok();
}

Status PserverCommunicator::RequestRows(
    std::string_view name, const std::vector<std::vector<const Tensor*>>& ids,
    const std::vector<Variable*>& tables, const PserverShard& shard) {
  const std::string what = "prefetch '" + std::string(name) + "'";
  // Every id the places read, once each, ascending (an id outside the
  // table is left out: the lookup that reads it names it), asked of the
  // pservers holding it; their rows come back block after block, ascending
  // as the ids.
  PAREX_RETURN_IF_ERROR(CollectWanted(ids, shard, what));
  PAREX_RETURN_IF_ERROR(AskBlocks(name, shard, what));
  SelectedRows* out = tables[0]->GetMutableSelectedRows();
  PAREX_RETURN_IF_ERROR(ReceiveBlocks(name, shard, what, out));
  max_prefetched_ =
      std::max<int64_t>(max_prefetched_, static_cast<int64_t>(wanted_.size()));
  for (size_t p = 1; p < tables.size(); ++p) {
    SelectedRows* copy = tables[p]->GetMutableSelectedRows();
    copy->rows = out->rows;
    copy->height = out->height;
    PAREX_RETURN_IF_ERROR(
        copy->value.TryAllocate(out->value.dtype(), out->value.dims()));
    if (out->value.bytes() > 0) {
      std::memcpy(copy->value.raw_data(), out->value.raw_data(),
                  out->value.bytes());
    }
  }
  return Status::Ok();
}

Status PserverCommunicator::ServeRows(std::string_view name,
                                      const Tensor& block,
                                      const PserverShard& shard) {
  const int64_t height = block.dim(0);
  const int64_t row_bytes =
      RowElements(shard.dims) * static_cast<int64_t>(SizeOf(block.dtype()));
  if (block.rank() != static_cast<int>(shard.dims.size()) ||
      RowElements(block.dims()) != RowElements(shard.dims)) {
    return Internal("prefetch '" + std::string(name) + "': the block " +
                    DimsToString(block.dims()) + " has no rows of the table " +
                    DimsToString(shard.dims));
  }
  for (int t : trainers_) {
    const std::string what =
        "prefetch '" + std::string(name) + "' for " + From(t);
    PAREX_RETURN_IF_ERROR(cross_->Recv(name, &ids_, t, kPrefetch));
    received_ += static_cast<int64_t>(ids_.bytes());
    if (ids_.dtype() != DType::kInt64 || ids_.rank() != 1) {
      return InvalidArgument(what + ": ids " + DimsToString(ids_.dims()) +
                             " are no int64 list");
    }
    const int64_t k = ids_.dim(0);
    Dims dims = shard.dims;
    dims[0] = k;
    PAREX_RETURN_IF_ERROR(scratch_.TryAllocate(block.dtype(), dims));
    for (int64_t i = 0; i < k; ++i) {
      const int64_t id = ids_.data<int64_t>()[i];
      if (id < 0 || id >= height) {
        return InvalidArgument(what + ": row " + std::to_string(id) +
                               " is outside this block's " +
                               std::to_string(height) + " rows");
      }
      std::memcpy(static_cast<char*>(scratch_.raw_data()) + i * row_bytes,
                  static_cast<const char*>(block.raw_data()) + id * row_bytes,
                  row_bytes);
    }
    PAREX_RETURN_IF_ERROR(cross_->Send(name, scratch_, t, kPrefetch));
    sent_ += static_cast<int64_t>(scratch_.bytes());
  }
  return Status::Ok();
}

}  // namespace parex
