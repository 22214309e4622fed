#include "actors/comm/gloo_communicator.h"

#include <gloo/allreduce_ring_chunked.h>
#include <gloo/broadcast_one_to_all.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <climits>
#include <cstring>
#include <exception>
#include <utility>

namespace parex {

struct GlooCommunicator::Entry {
  Collective collective = Collective::kAllReduce;
  DType dtype = DType::kUndefined;
  int64_t count = 0;
  int root = 0;
  std::unique_ptr<char[]> staging;
  std::unique_ptr<gloo::Algorithm> algorithm;  // null when count == 0
};

namespace {

template <typename T>
std::unique_ptr<gloo::Algorithm> MakeAllReduce(const std::shared_ptr<gloo::Context>& context,
                                               char* data, int64_t count) {
  return std::make_unique<gloo::AllreduceRingChunked<T>>(
      context, std::vector<T*>{reinterpret_cast<T*>(data)}, static_cast<int>(count));
}

}  // namespace

StatusOr<std::shared_ptr<GlooCommunicator>> GlooCommunicator::Connect(
    gloo::rendezvous::Store& store, int rank, int size, const std::string& host,
    std::chrono::milliseconds timeout, std::vector<std::string> rank_names) {
  if (size < 1 || rank < 0 || rank >= size ||
      static_cast<int>(rank_names.size()) != size) {
    return InvalidArgument("gloo: rank " + std::to_string(rank) + " of " +
                           std::to_string(size) + " with " +
                           std::to_string(rank_names.size()) + " names");
  }
  std::shared_ptr<GlooCommunicator> comm(new GlooCommunicator());
  comm->rank_ = rank;
  comm->size_ = size;
  comm->rank_names_ = std::move(rank_names);
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = host;
    std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(timeout);
    context->connectFullMesh(store, device);
    comm->context_ = std::move(context);
  } catch (const std::exception& e) {
    return Aborted("gloo: " + comm->rank_names_[rank] + " (rank " + std::to_string(rank) +
                   " of " + std::to_string(size) + ") could not connect to its peers on " +
                   host + ": " + e.what());
  }
  return comm;
}

GlooCommunicator::~GlooCommunicator() = default;

void GlooCommunicator::Interrupt(const Status& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  interrupted_ = reason;
}

void GlooCommunicator::Resume() {
  std::lock_guard<std::mutex> lock(mu_);
  interrupted_ = Status::Ok();
}

Status GlooCommunicator::Failed(Collective collective, std::string_view name,
                                const std::string& what) {
  Status s = Aborted(std::string(CollectiveName(collective)) + " '" + std::string(name) +
                     "' across nodes (" + rank_names_[rank_] + ", rank " +
                     std::to_string(rank_) + " of " + std::to_string(size_) + "): " + what);
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_.ok()) broken_ = s;
  return s;
}

StatusOr<GlooCommunicator::Entry*> GlooCommunicator::EntryFor(Collective collective,
                                                               std::string_view name,
                                                               DType dtype, int64_t count,
                                                               int root) {
  auto it = entries_.find(name);
  if (it != entries_.end() && it->second->collective == collective &&
      it->second->dtype == dtype && it->second->count == count && it->second->root == root) {
    return it->second.get();
  }
  if (count > INT_MAX) {
    return OutOfRange(std::string(CollectiveName(collective)) + " '" + std::string(name) +
                      "': " + std::to_string(count) +
                      " elements are more than one Gloo call takes (2^31 - 1)");
  }
  auto entry = std::make_unique<Entry>();
  entry->collective = collective;
  entry->dtype = dtype;
  entry->count = count;
  entry->root = root;
  const int64_t bytes = count * static_cast<int64_t>(SizeOf(dtype));
  entry->staging.reset(new char[std::max<int64_t>(bytes, 1)]);
  if (count > 0) {
    char* data = entry->staging.get();
    try {
      if (collective == Collective::kBroadcast) {
        entry->algorithm = std::make_unique<gloo::BroadcastOneToAll<uint8_t>>(
            context_, std::vector<uint8_t*>{reinterpret_cast<uint8_t*>(data)},
            static_cast<size_t>(bytes), root, 0);
      } else {
        switch (dtype) {
          case DType::kFP32:
            entry->algorithm = MakeAllReduce<float>(context_, data, count);
            break;
          case DType::kFP64:
            entry->algorithm = MakeAllReduce<double>(context_, data, count);
            break;
          case DType::kInt32:
            entry->algorithm = MakeAllReduce<int32_t>(context_, data, count);
            break;
          case DType::kInt64:
            entry->algorithm = MakeAllReduce<int64_t>(context_, data, count);
            break;
          default:
            return InvalidArgument(std::string(CollectiveName(collective)) + " '" +
                                   std::string(name) + "': dtype " + DTypeName(dtype) +
                                   " cannot be summed across nodes (fp32, fp64, int32, "
                                   "int64 can)");
        }
      }
    } catch (const std::exception& e) {
      return Failed(collective, name, e.what());
    }
  }
  Entry* raw = entry.get();
  if (it != entries_.end()) {
    it->second = std::move(entry);
  } else {
    entries_.emplace(std::string(name), std::move(entry));
  }
  return raw;
}

Status GlooCommunicator::Run(Collective collective, std::string_view name,
                             TensorGroups groups, int root) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!interrupted_.ok()) return interrupted_;
    if (!broken_.ok()) return broken_;
  }
  if (root < 0 || root >= size_) {
    return InvalidArgument(std::string(CollectiveName(collective)) + " '" +
                           std::string(name) + "': root rank " + std::to_string(root) +
                           " is not in 0.." + std::to_string(size_ - 1));
  }
  DType dtype = DType::kUndefined;
  int64_t count = 0;
  for (const PlaceTensors& group : groups) {
    if (group.size() != 1 || group[0] == nullptr || !group[0]->defined()) {
      return InvalidArgument(std::string(CollectiveName(collective)) + " '" +
                             std::string(name) + "' across nodes: each group needs " +
                             "one defined tensor of this rank");
    }
    const Tensor& t = *group[0];
    if (dtype == DType::kUndefined) dtype = t.dtype();
    if (t.dtype() != dtype) {
      return InvalidArgument(std::string(CollectiveName(collective)) + " '" +
                             std::string(name) + "': a fused bucket mixes " +
                             DTypeName(dtype) + " and " + DTypeName(t.dtype()));
    }
    count += t.numel();
  }
  if (collective == Collective::kBroadcast) {
    count *= static_cast<int64_t>(SizeOf(dtype));  // bytes
  }
  PAREX_ASSIGN_OR_RETURN(Entry * entry,
                         EntryFor(collective, name,
                                  collective == Collective::kBroadcast ? DType::kUInt8 : dtype,
                                  count, collective == Collective::kBroadcast ? root : 0));
  if (entry->algorithm == nullptr) return Status::Ok();
  char* at = entry->staging.get();
  for (const PlaceTensors& group : groups) {
    const size_t bytes = group[0]->bytes();
    if (bytes > 0) std::memcpy(at, group[0]->raw_data(), bytes);
    at += bytes;
  }
  try {
    entry->algorithm->run();
  } catch (const std::exception& e) {
    return Failed(collective, name, e.what());
  }
  if (collective == Collective::kReduce && rank_ != root) return Status::Ok();
  at = entry->staging.get();
  for (const PlaceTensors& group : groups) {
    const size_t bytes = group[0]->bytes();
    if (bytes > 0) std::memcpy(group[0]->raw_data(), at, bytes);
    at += bytes;
  }
  return Status::Ok();
}

Status GlooCommunicator::AllReduce(std::string_view name, TensorGroups groups) {
  return Run(Collective::kAllReduce, name, groups, 0);
}

Status GlooCommunicator::Reduce(std::string_view name, TensorGroups groups, int root) {
  return Run(Collective::kReduce, name, groups, root);
}

Status GlooCommunicator::Broadcast(std::string_view name, TensorGroups groups, int root) {
  return Run(Collective::kBroadcast, name, groups, root);
}

Status GlooCommunicator::AllGather(std::string_view name, const PlaceTensors& inputs,
                                   const PlaceTensors& outputs) {
  return Unimplemented("all_gather '" + std::string(name) +
                       "' across nodes: not supported (dense gradients are all-reduced)");
}

}  // namespace parex
