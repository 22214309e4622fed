#include "actors/comm/gloo_communicator.h"

#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <climits>
#include <cstring>
#include <exception>
#include <utility>

namespace parex {

struct GlooCommunicator::Entry {
  DType dtype = DType::kUndefined;
  int64_t count = 0;
  // A fused bucket's groups, end to end: 1-D, `count` elements of `dtype`.
  Tensor staging;
};

namespace {

// Gloo's collectives take the reduction as a function over raw memory.
using ReduceFunction = void (*)(void*, const void*, const void*, size_t);

template <typename T>
void AllReduceOf(const std::shared_ptr<gloo::Context>& context, void* in, void* out,
                 int64_t count, uint32_t tag) {
  gloo::AllreduceOptions opts(context);
  if (in != out) opts.setInput(static_cast<T*>(in), static_cast<size_t>(count));
  opts.setOutput(static_cast<T*>(out), static_cast<size_t>(count));
  opts.setReduceFunction(static_cast<ReduceFunction>(&gloo::sum<T>));
  opts.setTag(tag);
  gloo::allreduce(opts);
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

StatusOr<GlooCommunicator::Entry*> GlooCommunicator::StagingFor(std::string_view name,
                                                                 DType dtype, int64_t count,
                                                                 Place place) {
  auto it = entries_.find(name);
  if (it != entries_.end() && it->second->dtype == dtype && it->second->count == count &&
      it->second->staging.place() == place) {
    return it->second.get();
  }
  auto entry = std::make_unique<Entry>();
  entry->dtype = dtype;
  entry->count = count;
  if (Status s = entry->staging.TryAllocate(dtype, {count}, place); !s.ok()) {
    return s.WithContext("fused bucket '" + std::string(name) + "' across nodes");
  }
  Entry* raw = entry.get();
  entries_[std::string(name)] = std::move(entry);
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
  if (count == 0) return Status::Ok();  // every rank passes the same counts
  if (count > INT_MAX) {
    return OutOfRange(std::string(CollectiveName(collective)) + " '" + std::string(name) +
                      "': " + std::to_string(count) +
                      " elements are more than one Gloo call takes (2^31 - 1)");
  }
  const bool sums = collective != Collective::kBroadcast;
  if (sums && dtype != DType::kFP32 && dtype != DType::kFP64 && dtype != DType::kInt32 &&
      dtype != DType::kInt64) {
    return InvalidArgument(std::string(CollectiveName(collective)) + " '" + std::string(name) +
                           "': dtype " + DTypeName(dtype) +
                           " cannot be summed across nodes (fp32, fp64, int32, int64 can)");
  }

  // One group: Gloo works on the tensor itself. A fused bucket: its groups
  // are laid end to end in the staging memory; an all-reduce leaves each
  // tensor viewing its range there (dims and LoD kept), so next step's
  // gradients, written in place, need no copy in.
  Tensor* single = groups.size() == 1 ? groups[0][0] : nullptr;
  Entry* entry = nullptr;
  bool staged = false;  // the bucket's tensors already view the staging
  if (single == nullptr) {
    PAREX_ASSIGN_OR_RETURN(entry, StagingFor(name, dtype, count, groups[0][0]->place()));
    char* const base = static_cast<char*>(entry->staging.raw_data());
    staged = true;
    size_t at = 0;
    for (const PlaceTensors& group : groups) {
      staged = staged && group[0]->raw_data() == base + at;
      at += group[0]->bytes();
    }
    if (!staged) {
      at = 0;
      for (const PlaceTensors& group : groups) {
        const size_t bytes = group[0]->bytes();
        if (bytes > 0) std::memcpy(base + at, group[0]->raw_data(), bytes);
        at += bytes;
      }
    }
  }
  void* data = single != nullptr ? single->raw_data() : entry->staging.raw_data();
  // A reduce leaves the tensors of the ranks other than root as they were:
  // their sum goes to scratch memory.
  void* out = data;
  if (collective == Collective::kReduce && rank_ != root) {
    if (scratch_.numel() < count * static_cast<int64_t>(SizeOf(dtype))) {
      PAREX_RETURN_IF_ERROR(
          scratch_.TryAllocate(DType::kUInt8, {count * static_cast<int64_t>(SizeOf(dtype))}));
    }
    out = scratch_.raw_data();
  }
  const uint32_t tag = next_tag_++;
  try {
    if (collective == Collective::kBroadcast) {
      gloo::BroadcastOptions opts(context_);
      if (rank_ == root) opts.setInput(static_cast<uint8_t*>(data), count * SizeOf(dtype));
      opts.setOutput(static_cast<uint8_t*>(data), count * SizeOf(dtype));
      opts.setRoot(root);
      opts.setTag(tag);
      gloo::broadcast(opts);
    } else {
      switch (dtype) {
        case DType::kFP32:
          AllReduceOf<float>(context_, data, out, count, tag);
          break;
        case DType::kFP64:
          AllReduceOf<double>(context_, data, out, count, tag);
          break;
        case DType::kInt32:
          AllReduceOf<int32_t>(context_, data, out, count, tag);
          break;
        default:
          AllReduceOf<int64_t>(context_, data, out, count, tag);
          break;
      }
    }
  } catch (const std::exception& e) {
    return Failed(collective, name, e.what());
  }
  if (single != nullptr || staged || out != data) return Status::Ok();
  size_t at = 0;
  int64_t element = 0;
  for (const PlaceTensors& group : groups) {
    Tensor& t = *group[0];
    const size_t bytes = t.bytes();
    if (collective == Collective::kAllReduce) {
      const Dims dims = t.dims();
      LoD lod = t.lod();
      t.ViewElements(entry->staging, element, element + t.numel());
      t.Reshape(dims);
      t.set_lod(std::move(lod));
    } else if (bytes > 0) {
      std::memcpy(t.raw_data(), static_cast<const char*>(data) + at, bytes);
    }
    at += bytes;
    element += t.numel();
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
