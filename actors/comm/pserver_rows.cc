// PserverCommunicator's sparse rows (pserver_communicator.h): a trainer's
// rows of a gradient to the pservers holding them, and the rows of the
// parameter that changed back.
#include <algorithm>
#include <cstring>

#include "actors/comm/pserver_communicator.h"
#include "graph/ir/place_group.h"

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
      std::memcpy(
          static_cast<char*>(scratch_.raw_data()) + i * row_bytes,
          static_cast<const char*>(param.raw_data()) + rows[i] * row_bytes,
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
        std::memcpy(
            static_cast<char*>(dst->raw_data()) + (begin + id) * row_bytes,
            static_cast<const char*>(scratch_.raw_data()) + i * row_bytes,
            row_bytes);
      }
    }
  }
  return Status::Ok();
}

}  // namespace parex
