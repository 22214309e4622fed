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
  PAREX_ASSIGN_OR_RETURN(std::vector<Part> parts, Parts(name, groups));
  return pserver_ ? RecvGradients(name, parts) : SendGradients(parts);
}

Status PserverCommunicator::Broadcast(std::string_view name,
                                      TensorGroups groups, int root) {
  (void)root;
  if (pserver_) {
    PAREX_ASSIGN_OR_RETURN(std::vector<Part> parts, Parts(name, groups));
    return SendParameters(name, parts);
  }
  if (Defer(name, &groups, nullptr)) return Status::Ok();
  return RecvParameters(name, groups);
}

StatusOr<std::vector<PserverCommunicator::Part>> PserverCommunicator::Parts(
    std::string_view joined, TensorGroups groups) const {
  std::vector<Part> parts;
  size_t from = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    const size_t to = std::min(joined.find('\n', from), joined.size());
    Part part;
    part.name = std::string(joined.substr(from, to - from));
    PAREX_ASSIGN_OR_RETURN(part.shard, ShardOf(part.name));
    part.places = &groups[i];
    parts.push_back(std::move(part));
    from = to + 1;
  }
  if (from <= joined.size()) {
    return Internal("'" + std::string(joined) + "' names more variables than " +
                    std::to_string(groups.size()));
  }
  return parts;
}

// The parts of `parts` that node `rank` holds, as one message: their names
// joined, and each one's rows [begin, end) of its tensor.
PserverCommunicator::Message PserverCommunicator::MessageFor(
    int rank, const std::vector<Part>& parts) const {
  Message m;
  for (size_t i = 0; i < parts.size(); ++i) {
    const PserverShard& shard = *parts[i].shard;
    const int blocks = static_cast<int>(shard.ranks.size());
    for (int b = 0; b < blocks; ++b) {
      if (shard.ranks[b] != rank) continue;
      const auto [begin, end] = blocks == 1
                                    ? std::pair<int64_t, int64_t>(0, shard.rows)
                                    : RowBlock(shard.rows, b, blocks);
      m.name += (m.name.empty() ? "" : "\n") + parts[i].name;
      m.pieces.push_back({i, begin, end});
    }
  }
  return m;
}

std::vector<int> PserverCommunicator::Holders(
    const std::vector<Part>& parts) const {
  std::vector<int> ranks;
  for (const Part& p : parts) {
    for (int r : p.shard->ranks) {
      if (std::find(ranks.begin(), ranks.end(), r) == ranks.end()) {
        ranks.push_back(r);
      }
    }
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

// Rows [begin, end) of `t` (all of it when they are all its rows).
Tensor PserverCommunicator::Rows(const Tensor& t, const Piece& piece,
                                 const PserverShard& shard) {
  if (piece.begin == 0 && piece.end == shard.rows) return t;
  return t.Slice(piece.begin, piece.end);
}

Status PserverCommunicator::Pack(const std::vector<Tensor>& pieces,
                                 const std::string& what, Tensor* out) {
  int64_t numel = 0;
  for (const Tensor& t : pieces) {
    if (t.dtype() != pieces[0].dtype()) {
      return InvalidArgument(what + ": its variables mix " +
                             DTypeName(pieces[0].dtype()) + " and " +
                             DTypeName(t.dtype()));
    }
    numel += t.numel();
  }
  PAREX_RETURN_IF_ERROR(out->TryAllocate(pieces[0].dtype(), {numel}));
  char* at = static_cast<char*>(out->raw_data());
  for (const Tensor& t : pieces) {
    if (t.bytes() > 0) std::memcpy(at, t.raw_data(), t.bytes());
    at += t.bytes();
  }
  return Status::Ok();
}

Status PserverCommunicator::SendGradients(const std::vector<Part>& parts) {
  for (const Part& p : parts) {
    if (p.places->size() > 1) {
      PAREX_RETURN_IF_ERROR(local_.Reduce(p.name, *p.places, 0));
    }
    const Tensor& sum = *(*p.places)[0];
    if (sum.rank() < 1 || sum.dim(0) != p.shard->rows) {
      return InvalidArgument("send '" + p.name + "': gradient " +
                             DimsToString(sum.dims()) + " does not have the " +
                             std::to_string(p.shard->rows) +
                             " rows of its parameter");
    }
  }
  for (int rank : Holders(parts)) {
    const Message m = MessageFor(rank, parts);
    std::vector<Tensor> pieces;
    for (const Piece& piece : m.pieces) {
      pieces.push_back(Rows(*(*parts[piece.part].places)[0], piece,
                            *parts[piece.part].shard));
    }
    const Tensor* out = &pieces[0];
    if (pieces.size() > 1) {
      PAREX_RETURN_IF_ERROR(
          Pack(pieces, "send '" + ShownName(m.name) + "'", &packed_));
      out = &packed_;
    }
    PAREX_RETURN_IF_ERROR(cross_->Send(m.name, *out, rank));
    sent_ += static_cast<int64_t>(out->bytes());
  }
  return Status::Ok();
}

Status PserverCommunicator::RecvGradients(std::string_view name,
                                          const std::vector<Part>& parts) {
  const Message m = MessageFor(cross_->first_local_rank(), parts);
  if (m.name != name) {
    return Internal("recv '" + ShownName(name) + "': this pserver holds '" +
                    ShownName(m.name) + "' of them");
  }
  std::vector<Dims> dims;
  int64_t numel = 0;
  for (const Piece& piece : m.pieces) {
    Dims d = parts[piece.part].shard->dims;
    d[0] = piece.end - piece.begin;
    numel += Numel(d);
    dims.push_back(d);
  }
  for (size_t t = 0; t < trainers_.size(); ++t) {
    const std::string what =
        "recv '" + ShownName(m.name) + "' from " + From(trainers_[t]);
    PAREX_RETURN_IF_ERROR(cross_->Recv(m.name, &packed_, trainers_[t]));
    received_ += static_cast<int64_t>(packed_.bytes());
    const DType dtype = packed_.dtype();
    if (packed_.numel() != numel ||
        (dtype != DType::kFP32 && dtype != DType::kFP64)) {
      return InvalidArgument(
          what + ": " + DTypeName(dtype) + DimsToString(packed_.dims()) +
          ", but its " + std::to_string(m.pieces.size()) +
          " gradient block(s) hold " + std::to_string(numel) +
          " float32 or float64 elements");
    }
    int64_t offset = 0;
    for (size_t k = 0; k < m.pieces.size(); ++k) {
      Tensor* g = (*parts[m.pieces[k].part].places)[0];
      Tensor piece;
      piece.ViewElements(packed_, offset, offset + Numel(dims[k]));
      offset += Numel(dims[k]);
      if (t == 0) {
        PAREX_RETURN_IF_ERROR(g->TryAllocate(dtype, dims[k]).WithContext(what));
        std::memcpy(g->raw_data(), piece.raw_data(), piece.bytes());
      } else if (g->dtype() != dtype) {
        return InvalidArgument(what + ": " + DTypeName(dtype) +
                               ", but the first trainer sent " +
                               DTypeName(g->dtype()));
      } else if (dtype == DType::kFP32) {
        AddInto<float>(piece, g);
      } else {
        AddInto<double>(piece, g);
      }
    }
  }
  return Status::Ok();
}

Status PserverCommunicator::SendParameters(std::string_view name,
                                           const std::vector<Part>& parts) {
  std::vector<Tensor> pieces;
  for (const Part& p : parts) pieces.push_back(*(*p.places)[0]);
  const Tensor* out = &pieces[0];
  Tensor packed;  // posted sends copy it
  if (pieces.size() > 1) {
    PAREX_RETURN_IF_ERROR(Pack(pieces, "send '" + ShownName(name) + "'",
                               max_staleness_ > 0 ? &packed : &packed_));
    out = max_staleness_ > 0 ? &packed : &packed_;
  }
  PAREX_RETURN_IF_ERROR(BeginSends(name));
  for (int t : trainers_) {
    PAREX_RETURN_IF_ERROR(Post(name, *out, t));
    sent_ += static_cast<int64_t>(out->bytes());
  }
  return Status::Ok();
}

Status PserverCommunicator::RecvParameters(std::string_view name,
                                           TensorGroups groups) {
  PAREX_ASSIGN_OR_RETURN(std::vector<Part> parts, Parts(name, groups));
  for (int rank : Holders(parts)) {
    const Message m = MessageFor(rank, parts);
    const std::string what =
        "recv '" + ShownName(m.name) + "' from " + From(rank);
    PAREX_RETURN_IF_ERROR(cross_->Recv(m.name, &packed_, rank));
    received_ += static_cast<int64_t>(packed_.bytes());
    int64_t offset = 0;
    for (const Piece& piece : m.pieces) {
      const Part& part = parts[piece.part];
      for (size_t p = 0; p < part.places->size(); ++p) {
        Tensor* dst = (*part.places)[p];
        if (p > 0 && dst == (*part.places)[0]) continue;
        Tensor rows = Rows(*dst, piece, *part.shard);
        if (rows.dtype() != packed_.dtype() ||
            offset + rows.numel() > packed_.numel()) {
          return InvalidArgument(
              what + ": " + DTypeName(packed_.dtype()) +
              DimsToString(packed_.dims()) + " does not hold rows " +
              std::to_string(piece.begin) + "-" + std::to_string(piece.end) +
              " of '" + part.name + "' (" + DTypeName(dst->dtype()) +
              DimsToString(dst->dims()) + ") at element " +
              std::to_string(offset));
        }
        std::memcpy(rows.raw_data(),
                    static_cast<const char*>(packed_.raw_data()) +
                        offset * SizeOf(packed_.dtype()),
                    rows.bytes());
      }
      offset += Rows(*(*part.places)[0], piece, *part.shard).numel();
    }
    if (offset != packed_.numel()) {
      return InvalidArgument(what + ": " + std::to_string(packed_.numel()) +
                             " elements for " + std::to_string(offset));
    }
  }
  return Status::Ok();
}

}  // namespace parex

namespace parex {

bool PserverCommunicator::Defer(std::string_view name,
                                const TensorGroups* dense,
                                const std::vector<Variable*>* rows) {
  if (max_staleness_ == 0) return false;
  const std::string key(name);
  if (std::find(order_.begin(), order_.end(), key) == order_.end()) {
    order_.push_back(key);
  }
  int64_t& deferred = deferred_[key];
  if (deferred >= max_staleness_) return false;
  ++deferred;
  if (dense != nullptr) {
    dense_targets_[key].assign(dense->begin(), dense->end());
  }
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
      if (row_targets_.count(name) != 0) {
        PAREX_ASSIGN_OR_RETURN(const PserverShard* shard, ShardOf(name));
        PAREX_RETURN_IF_ERROR(
            RecvParameterRows(name, row_targets_[name], *shard));
      } else {
        PAREX_RETURN_IF_ERROR(RecvParameters(name, dense_targets_[name]));
      }
    }
  }
  deferred_.clear();
  return Status::Ok();
}

}  // namespace parex
