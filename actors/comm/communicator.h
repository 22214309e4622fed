// Communicator: the collectives over the places of a data-parallel run
// (DESIGN.md §3.4 collective actors, §4 across machines).
//
// A communicator joins `world_size()` ranks; rank r is the r-th place of the
// run (a place, or a process standing for a node's places once they have been
// reduced inside the node). Collective actors call it; op actors never see
// which backend is behind it. The header is free of CAF, threads and devices
// so that every backend implements the same contract:
//
//   - InProcessCommunicator (in_process_communicator.h): CPU places of one
//     process. One instance serves every rank, so each call passes the tensors
//     of all places at once (local_size() == world_size()) and does the whole
//     collective itself, split into chunks the runtime's workers may run in
//     parallel.
//   - A Gloo backend (CPU, across processes): one instance per process, one
//     rank each (local_size() == 1, first_local_rank() == its rank). Each
//     rank's call passes only its own tensor; the call blocks until the peers
//     made the matching call with theirs (gloo::allreduce over a context that
//     was connected through the rendezvous at plan build time, with buffers
//     registered once). A fused bucket becomes one Gloo call over several
//     buffers (Gloo's allreduce takes a list of pointers of one type).
//   - An NCCL backend: one rank per GPU. With one GPU per process it looks
//     like Gloo; with several GPUs per process, local_size() is that count and
//     the call issues ncclAllReduce once per local GPU inside
//     ncclGroupStart/End, enqueued on each GPU's communication stream (the
//     call returns once enqueued; completion is an event the stream actor
//     waits on). Fused buckets need one contiguous device buffer there, which
//     the plan lays out at build time.
//
// Ordering: every rank must issue the same collectives in the same order, or
// the ranks wait on each other forever (the classic hang). The caller (one
// collective actor per communicator) serialises the calls in one fixed order
// derived from the graph; a communicator is not reentrant.
//
// Data contract shared by all backends:
//   - Sums are elementwise over the ranks in rank order:
//     ((x_0 + x_1) + x_2) + ..., so a run repeats bit for bit. (A ring or
//     tree across processes fixes its own order; it still must not depend on
//     timing.)
//   - All-reduce, reduce and broadcast work in place on tensors of equal
//     element count and dtype on every rank (dims may differ, e.g. after a
//     reshape). A fused bucket (several groups) is one contiguous range made
//     of group 0's elements, then group 1's, ...; its groups share one dtype
//     (Gloo and NCCL reduce one typed buffer).
//   - All-gather concatenates the ranks' row blocks along dim 0 in rank order
//     onto every rank (sparse gradients: rows differ per rank, trailing dims
//     agree); the backend sizes the outputs.
//   - Errors are Status values that name the collective, the variable (the
//     `name` argument), the place and the mismatch, e.g.
//     "all_reduce 'fc_0.w_0@GRAD' place cpu:1: shape [784,100] != [784,10]
//     of cpu:0"; on error no tensor's data has been written (all-gather
//     may have resized its outputs).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kernels/scope.h"
#include "kernels/tensor.h"

namespace parex {

enum class Collective : int { kAllReduce, kReduce, kBroadcast, kAllGather };

// "all_reduce", "reduce", "broadcast", "all_gather" (the op handle names).
inline const char* CollectiveName(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return "all_reduce";
    case Collective::kReduce:
      return "reduce";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kAllGather:
      return "all_gather";
  }
  return "?";
}

// A call's name as messages show it: a parameter-server send or receive
// names every variable it moves joined by '\n' (the key its peer matches),
// shown "a, b, c" so that an error stays one line.
inline std::string ShownName(std::string_view name) {
  std::string shown;
  shown.reserve(name.size());
  for (char c : name) {
    if (c == '\n') {
      shown += ", ";
    } else {
      shown += c;
    }
  }
  return shown;
}

// Hears each cross-node call begin (entering) and end: its number (the
// same on every rank: calls are made in one order), kind and name.
using CollectiveObserver = std::function<void(
    int64_t seq, Collective collective, std::string_view name, bool entering)>;

// The tensors of one variable on the local places of a call: entry i is the
// tensor of local place i (rank first_local_rank() + i). Not owned.
using PlaceTensors = std::vector<Tensor*>;

// A read-only view of one or more PlaceTensors; several form a fused bucket.
// Converts implicitly from one PlaceTensors or a vector of them, so a call
// builds no container. The viewed vectors must outlive the call.
class TensorGroups {
 public:
  TensorGroups(const PlaceTensors& one)  // NOLINT: implicit by design
      : data_(&one), size_(1) {}
  TensorGroups(const std::vector<PlaceTensors>& many)  // NOLINT
      : data_(many.data()), size_(many.size()) {}

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const PlaceTensors& operator[](size_t i) const { return data_[i]; }
  const PlaceTensors* begin() const { return data_; }
  const PlaceTensors* end() const { return data_ + size_; }

 private:
  const PlaceTensors* data_;
  size_t size_;
};

// Thread-safety: one call at a time per instance (see "Ordering" above).
// The tensors must not be read or written by anyone else during a call.
class Communicator {
 public:
  virtual ~Communicator() = default;

  // "in_process", "gloo", "nccl" (logs and traces).
  virtual const char* backend() const = 0;
  // Ranks joined by this communicator.
  virtual int world_size() const = 0;
  // Tensors each call passes per group: the ranks [first_local_rank(),
  // first_local_rank() + local_size()) this instance serves.
  virtual int local_size() const = 0;
  virtual int first_local_rank() const = 0;
  // The place of rank r, for messages ("cpu:1").
  virtual Place place(int rank) const = 0;
  // Whether a call may block its thread waiting for a peer (Gloo, NCCL): its
  // collective actor then gets a thread of its own (collective_actor.h).
  virtual bool blocking() const { return false; }
  // Abort (thread-safe, any thread, while a call may be blocked): the call
  // in progress and every later one return `reason` promptly until Resume.
  // A backend that never blocks may ignore it.
  virtual void Interrupt(const Status& reason) { (void)reason; }
  // Calls work again (the next step after an abort).
  virtual void Resume() {}
  // Whether a call's work may still be running when it returns (NCCL
  // queues on device streams): the caller then polls Health() while it
  // waits for that work, since such a backend learns of some failures only
  // later.
  virtual bool asynchronous() const { return false; }
  // Ok, or a failure of work queued by earlier calls (thread-safe).
  virtual Status Health() { return Status::Ok(); }

  // Every rank's tensors become the elementwise sum over all ranks.
  // REQUIRES: each group has local_size() tensors.
  virtual Status AllReduce(std::string_view name, TensorGroups groups) = 0;
  // Rank `root`'s tensors become the sum; the others' are left as they were
  // (a backend may use them as scratch only if it says so; in-process does
  // not).
  virtual Status Reduce(std::string_view name, TensorGroups groups,
                        int root) = 0;
  // Every rank's tensors become a copy of rank `root`'s (any dtype).
  virtual Status Broadcast(std::string_view name, TensorGroups groups,
                           int root) = 0;
  // outputs[i] becomes the concatenation along dim 0 of every rank's input
  // rows, in rank order, allocated (Tensor::Allocate, so a large-enough
  // buffer is kept) on the place of inputs[i]. Inputs agree in dtype and in
  // every dim but the first (any dtype; rank >= 1).
  // REQUIRES: inputs and outputs have local_size() entries; no output shares
  // memory with an input.
  virtual Status AllGather(std::string_view name, const PlaceTensors& inputs,
                           const PlaceTensors& outputs) = 0;

  // Point to point (a cross-node edge of a placed program, issue 32): Send
  // gives rank `to` this rank's `tensor` (dtype, dims and bytes); the
  // matching Recv on `to` (from this rank, under the same name; each pair's
  // messages arrive in the order they were sent) makes `*tensor` a copy,
  // allocated there (a large-enough buffer is kept). Errors name the
  // variable and both ranks. Backends without it: Unimplemented.
  // `channel` (0 .. kChannels - 1): each channel keeps its own order, so a
  // pair's messages of two kinds (a step's gradients and parameters, and
  // parameter-server prefetches) never wait on each other's turn.
  static constexpr int kChannels = 2;
  virtual Status Send(std::string_view name, const Tensor& tensor, int to,
                      int channel = 0) {
    (void)tensor;
    (void)channel;
    return Unimplemented(std::string(backend()) + ": send '" +
                         std::string(name) + "' to rank " + std::to_string(to) +
                         ": no point-to-point messages");
  }
  virtual Status Recv(std::string_view name, Tensor* tensor, int from,
                      int channel = 0) {
    (void)tensor;
    (void)channel;
    return Unimplemented(std::string(backend()) + ": recv '" +
                         std::string(name) + "' from rank " +
                         std::to_string(from) + ": no point-to-point messages");
  }

  // Send without waiting for the receive (async parameter-server training
  // sends parameters that a trainer receives steps later): the tensor's
  // bytes are copied and go when `to` receives them, in the pair's order;
  // FlushSends(keep) waits until at most `keep` such sends are pending.
  // Default: a blocking Send, so nothing is ever pending.
  virtual Status SendAsync(std::string_view name, const Tensor& tensor, int to,
                           int channel = 0) {
    return Send(name, tensor, to, channel);
  }
  virtual Status FlushSends(size_t keep = 0) {
    (void)keep;
    return Status::Ok();
  }

  // Parameter-server training's sparse rows (issue 32), the variables of
  // the local places: ReduceRows merges a sparse gradient (SelectedRows) to
  // where its rows are summed and applied, BroadcastRows brings back the
  // rows of the parameter that changed (into each place's dense tensor).
  // Backends without them: Unimplemented.
  virtual Status ReduceRows(std::string_view name,
                            const std::vector<Variable*>& places) {
    (void)places;
    return Unimplemented(std::string(backend()) + ": reduce rows of '" +
                         std::string(name) + "'");
  }
  virtual Status BroadcastRows(std::string_view name,
                               const std::vector<Variable*>& places) {
    (void)places;
    return Unimplemented(std::string(backend()) + ": broadcast rows of '" +
                         std::string(name) + "'");
  }

  // Parameter-server training's prefetch of a table's rows (issue 32): on a
  // trainer, `ids[p]` are place p's ids into table `name` (its lookups'
  // Ids), which the pservers hold in row blocks; every place's `tables[p]`
  // becomes SelectedRows of the rows all its places read (ascending, once
  // each; the table's height), so no trainer holds the table. On a pserver
  // (`ids` empty, `tables` its one place's block), every trainer's request
  // is answered from the block. Backends without it: Unimplemented.
  virtual Status Prefetch(std::string_view name,
                          const std::vector<std::vector<const Tensor*>>& ids,
                          const std::vector<Variable*>& tables) {
    (void)ids;
    (void)tables;
    return Unimplemented(std::string(backend()) + ": prefetch rows of '" +
                         std::string(name) + "'");
  }
};

}  // namespace parex
