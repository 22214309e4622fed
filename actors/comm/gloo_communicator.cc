#include "actors/comm/gloo_communicator.h"

#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>

#include <climits>
#include <csignal>
#include <cstring>
#include <exception>
#include <utility>

#include "actors/comm/cross_node_calls.h"
#include "base/text.h"

namespace parex {

struct GlooCommunicator::Entry {
  DType dtype = DType::kUndefined;
  int64_t count = 0;
  // The memory the algorithm was built over (registered with Gloo): 1-D,
  // `count` elements of `dtype`.
  Tensor staging;
  std::shared_ptr<gloo::Context> context;  // this collective's own
  std::unique_ptr<gloo::Algorithm> algorithm;
};

namespace {

// The tag of the barrier that follows building an algorithm.
constexpr uint32_t kBuildBarrierTag = 0x70617278;  // "parx"

template <typename T>
std::unique_ptr<gloo::Algorithm> MakeAllReduce(
    const std::shared_ptr<gloo::Context>& context, void* data, int64_t count) {
  return std::make_unique<gloo::AllreduceRingChunked<T>>(
      context, std::vector<T*>{static_cast<T*>(data)}, static_cast<int>(count));
}

}  // namespace

bool IsGlooTimeout(const std::string& what) {
  return what.find("imeout") != std::string::npos ||
         what.find("imed out") != std::string::npos;
}

GlooCommunicator::~GlooCommunicator() = default;

void IgnoreSigpipeUnlessHandled() {
  struct sigaction now {};
  if (sigaction(SIGPIPE, nullptr, &now) == 0 && now.sa_handler == SIG_DFL &&
      (now.sa_flags & SA_SIGINFO) == 0) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, nullptr);
  }
}

StatusOr<std::shared_ptr<GlooCommunicator>> GlooCommunicator::Connect(
    std::shared_ptr<gloo::rendezvous::Store> store, int rank, int size,
    const std::string& host, std::chrono::milliseconds timeout,
    std::vector<std::string> rank_names) {
  if (size < 1 || rank < 0 || rank >= size ||
      static_cast<int>(rank_names.size()) != size) {
    return InvalidArgument("gloo: rank " + std::to_string(rank) + " of " +
                           std::to_string(size) + " with " +
                           std::to_string(rank_names.size()) + " names");
  }
  IgnoreSigpipeUnlessHandled();
  std::shared_ptr<GlooCommunicator> comm(new GlooCommunicator());
  comm->rank_ = rank;
  comm->size_ = size;
  comm->rank_names_ = std::move(rank_names);
  comm->store_ = std::move(store);
  comm->timeout_ = timeout;
  comm->sent_.assign(size * kChannels, 0);
  comm->received_.assign(size * kChannels, 0);
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = host;
    comm->device_ = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::PrefixStore prefixed("main/", *comm->store_);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(timeout);
    context->connectFullMesh(prefixed, comm->device_);
    comm->context_ = std::move(context);
  } catch (const std::exception& e) {
    return Aborted("gloo: " + comm->rank_names_[rank] + " (rank " +
                   std::to_string(rank) + " of " + std::to_string(size) +
                   ") could not connect to its peers on " + host + ": " +
                   e.what());
  }
  return comm;
}

void GlooCommunicator::Interrupt(const Status& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  interrupted_ = reason;
  if (waiting_ != nullptr) {  // a point-to-point call can be woken
    waiting_->abortWaitRecv();
    waiting_->abortWaitSend();
  }
}

void GlooCommunicator::Resume() {
  std::lock_guard<std::mutex> lock(mu_);
  interrupted_ = Status::Ok();
}

Status GlooCommunicator::Failed(Collective collective, std::string_view name,
                                const std::string& what) {
  Status interrupted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    interrupted = interrupted_;
  }
  // An interrupt's reason says why (Gloo's error only echoes it); otherwise
  // the cluster may know more than Gloo (which node is gone, who had not
  // joined a call that timed out).
  std::string text = interrupted.ok() ? what : interrupted.message();
  std::string extra;
  if (interrupted.ok() && explain_) {
    extra = explain_(
        Failure{seq_, collective, std::string(name), IsGlooTimeout(what)});
  }
  // Gloo names a lost peer by its address only; the ring's collectives talk
  // to the two neighbours, so those are the nodes to look at.
  std::string peers;
  if (!extra.empty()) {
    peers = "; " + extra;
  } else if (!interrupted.ok()) {
    peers = "";
  } else if (size_ == 2) {
    peers = "; the peer: " + rank_names_[1 - rank_];
  } else if (size_ > 2) {
    peers = "; ring neighbours: " + rank_names_[(rank_ + size_ - 1) % size_] +
            " and " + rank_names_[(rank_ + 1) % size_];
  }
  Status s = Aborted(std::string(CollectiveName(collective)) + " '" +
                     std::string(name) + "' (collective #" +
                     std::to_string(seq_) + ") across nodes (" +
                     rank_names_[rank_] + ", rank " + std::to_string(rank_) +
                     " of " + std::to_string(size_) + "): " + text + peers);
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_.ok()) broken_ = s;
  return s;
}

StatusOr<GlooCommunicator::Entry*> GlooCommunicator::EntryFor(
    Collective collective, std::string_view name, DType dtype, int64_t count,
    Place place) {
  auto it = entries_.find(name);
  if (it != entries_.end() && it->second->dtype == dtype &&
      it->second->count == count && it->second->staging.place() == place) {
    return it->second.get();
  }
  auto entry = std::make_unique<Entry>();
  entry->dtype = dtype;
  entry->count = count;
  if (Status s = entry->staging.TryAllocate(dtype, {count}, place); !s.ok()) {
    return s.WithContext(std::string(CollectiveName(collective)) + " '" +
                         std::string(name) + "' across nodes");
  }
  void* data = entry->staging.raw_data();
  try {
    // A context of its own: with two of Gloo's registered-buffer
    // algorithms on one context, this Gloo stalled both ranks for good in
    // waitRecv (1024 then 4096 floats, within a few hundred runs); one
    // algorithm per context never did. The prefix is the same on every
    // rank: contexts are made in the same call order everywhere.
    gloo::rendezvous::PrefixStore prefixed(
        "c" + std::to_string(contexts_made_++) + "/", *store_);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank_, size_);
    context->setTimeout(timeout_);
    context->connectFullMesh(prefixed, device_);
    entry->context = context;
    switch (dtype) {
      case DType::kFP32:
        entry->algorithm = MakeAllReduce<float>(context, data, count);
        break;
      case DType::kFP64:
        entry->algorithm = MakeAllReduce<double>(context, data, count);
        break;
      case DType::kInt32:
        entry->algorithm = MakeAllReduce<int32_t>(context, data, count);
        break;
      default:  // Run let only the summable dtypes through
        entry->algorithm = MakeAllReduce<int64_t>(context, data, count);
        break;
    }
    // No rank may send to the new buffers before every rank registered
    // them (bytes for a slot not registered yet are another way to stall
    // this Gloo): a barrier of unbound buffers, which handle early sends.
    gloo::BarrierOptions barrier(context);
    barrier.setTag(kBuildBarrierTag);
    gloo::barrier(barrier);
  } catch (const std::exception& e) {
    return Failed(collective, name, e.what());
  }
  Entry* raw = entry.get();
  if (it != entries_.end()) {
    // The old one is kept (its context unused): closing it could reset a
    // peer still finishing the last run on it.
    retired_.push_back(std::move(it->second));
    it->second = std::move(entry);
  } else {
    entries_.emplace(std::string(name), std::move(entry));
  }
  return raw;
}

Status GlooCommunicator::Run(Collective collective, std::string_view name,
                             TensorGroups groups, int root) {
  // Numbered before anything can return: every rank makes the same calls,
  // so the numbers agree across ranks.
  const int64_t seq = ++seq_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!interrupted_.ok()) return interrupted_;
    if (!broken_.ok()) return broken_;
  }
  return Observed(observer_, seq, collective, name,
                  [&] { return RunCall(collective, name, groups, root); });
}

Status GlooCommunicator::RunCall(Collective collective, std::string_view name,
                                 TensorGroups groups, int root) {
  PAREX_ASSIGN_OR_RETURN(
      const CrossCall call,
      CheckCrossCall(collective, name, groups, root, size_, "Gloo"));
  if (call.count == 0) return Status::Ok();  // every rank passes the same
  if (collective == Collective::kBroadcast)
    return BroadcastOnce(name, groups, root, call.dtype, call.count);
  PAREX_RETURN_IF_ERROR(CheckSummable(collective, name, call.dtype));
  if (static_cast<size_t>(call.count) * SizeOf(call.dtype) <=
      direct_max_bytes()) {
    return AllReduceDirect(collective, name, groups, root, call.dtype,
                           call.count);
  }
  // An all-reduce leaves each tensor viewing its range of the staging
  // memory the algorithm was built over (cross_node_calls.h).
  PAREX_ASSIGN_OR_RETURN(Entry * entry,
                         EntryFor(collective, name, call.dtype, call.count,
                                  groups[0][0]->place()));
  const bool alias = collective == Collective::kAllReduce;
  PAREX_ASSIGN_OR_RETURN(const bool in_place, StageIn(collective, name, groups,
                                                      entry->staging, alias));
  try {
    entry->algorithm->run();
  } catch (const std::exception& e) {
    return Failed(collective, name, e.what());
  }
  if (in_place || (collective == Collective::kReduce && rank_ != root))
    return Status::Ok();
  StageOut(groups, entry->staging, alias);
  return Status::Ok();
}

Status GlooCommunicator::AllReduce(std::string_view name, TensorGroups groups) {
  return Run(Collective::kAllReduce, name, groups, 0);
}

Status GlooCommunicator::Reduce(std::string_view name, TensorGroups groups,
                                int root) {
  return Run(Collective::kReduce, name, groups, root);
}

Status GlooCommunicator::BroadcastOnce(std::string_view name,
                                       TensorGroups groups, int root,
                                       DType dtype, int64_t count) {
  const size_t bytes = static_cast<size_t>(count) * SizeOf(dtype);
  Tensor* single = groups.size() == 1 ? groups[0][0] : nullptr;
  uint8_t* data = nullptr;
  if (single != nullptr) {
    data = static_cast<uint8_t*>(single->raw_data());
  } else {
    if (Status s = broadcast_staging_.TryAllocate(
            DType::kUInt8, {static_cast<int64_t>(bytes)});
        !s.ok()) {
      return s.WithContext("broadcast '" + std::string(name) +
                           "' across nodes");
    }
    data = static_cast<uint8_t*>(broadcast_staging_.raw_data());
    size_t at = 0;
    for (const PlaceTensors& group : groups) {
      if (group[0]->bytes() > 0)
        std::memcpy(data + at, group[0]->raw_data(), group[0]->bytes());
      at += group[0]->bytes();
    }
  }
  try {
    // In place on every rank, the root included: given an input too (the
    // same memory), Gloo's root memcpy()s input to output while its sends
    // of that memory are still in flight (ThreadSanitizer found it).
    gloo::BroadcastOptions opts(context_);
    opts.setOutput(data, bytes);
    opts.setRoot(root);
    opts.setTag(broadcast_tag_++);
    gloo::broadcast(opts);
  } catch (const std::exception& e) {
    return Failed(Collective::kBroadcast, name, e.what());
  }
  if (single == nullptr) {
    size_t at = 0;
    for (const PlaceTensors& group : groups) {
      if (group[0]->bytes() > 0)
        std::memcpy(group[0]->raw_data(), data + at, group[0]->bytes());
      at += group[0]->bytes();
    }
  }
  return Status::Ok();
}

Status GlooCommunicator::Broadcast(std::string_view name, TensorGroups groups,
                                   int root) {
  return Run(Collective::kBroadcast, name, groups, root);
}

Status GlooCommunicator::AllGather(std::string_view name,
                                   const PlaceTensors& inputs,
                                   const PlaceTensors& outputs) {
  return Unimplemented(
      "all_gather '" + std::string(name) +
      "' across nodes: not supported (dense gradients are all-reduced)");
}

}  // namespace parex
