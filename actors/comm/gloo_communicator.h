// GlooCommunicator: the collectives across processes, one rank per process
// (a node of the cluster), over Gloo's TCP transport (DESIGN.md §4).
//
// Each call passes this rank's tensor of each group (local_size() == 1) and
// blocks until every rank made the matching call, so its collective actor is
// detached (blocking() is true). Calls use Gloo's collectives over unbound
// buffers (gloo::allreduce, gloo::broadcast: a buffer is bound to the call,
// and a peer's early send waits for the matching receive), with a tag per
// call that follows the same sequence on every rank; ranks therefore must
// make their calls in one order (the collective actor's fixed order).
// Gloo's older algorithm classes that register buffers at construction
// (AllreduceRingChunked) are not used: with two of them on one context of
// this Gloo, the second stalled both ranks in waitRecv after a few hundred
// runs (tests/actors/comm/gloo_communicator_test.cc keeps the pattern).
//
// Memory: one group is reduced in place in the tensor itself. A fused
// bucket's groups are copied end to end into a staging tensor kept per name,
// reduced there, and each tensor is left viewing its range of it (dims and
// LoD kept), so the next step's gradients, written in place by their ops,
// need no copy at all.
//
// Sums: Gloo's ring reduce-scatter then all-gather: each segment is summed
// once along the ring and the finished segment is copied to every rank, so
// every rank ends with the same bits, and the same inputs give the same bits
// run to run. (Gloo's AllreduceRing class sums in a different order on each
// rank: with 3 ranks the ranks' parameters drifted apart.) Errors (a peer
// gone, a timeout: the context's timeout is the topology's
// collective_timeout_ms) are Status values naming the collective, the
// variable and the rank; after one, the Gloo context is closed, so every
// later call fails with the same error.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actors/comm/communicator.h"

namespace gloo {
class Context;
namespace rendezvous {
class Store;
}  // namespace rendezvous
}  // namespace gloo

namespace parex {

class GlooCommunicator final : public Communicator {
 public:
  // Joins `size` ranks through `store` (every rank calls it with the same
  // store contents and its own rank), listening on `host` (an address of
  // this machine; Gloo picks the port). `rank_names` name the ranks in
  // messages (node names). Errors: the rendezvous or a connection failed or
  // timed out.
  static StatusOr<std::shared_ptr<GlooCommunicator>> Connect(
      gloo::rendezvous::Store& store, int rank, int size, const std::string& host,
      std::chrono::milliseconds timeout, std::vector<std::string> rank_names);
  ~GlooCommunicator() override;

  const char* backend() const override { return "gloo"; }
  int world_size() const override { return size_; }
  int local_size() const override { return 1; }
  int first_local_rank() const override { return rank_; }
  Place place(int rank) const override { return Place::CPU(rank); }
  bool blocking() const override { return true; }
  void Interrupt(const Status& reason) override;
  void Resume() override;

  Status AllReduce(std::string_view name, TensorGroups groups) override;
  // Rank `root` gets the sum (computed as an all-reduce; the others' tensors
  // are left as they were).
  Status Reduce(std::string_view name, TensorGroups groups, int root) override;
  Status Broadcast(std::string_view name, TensorGroups groups, int root) override;
  // Not across processes yet (parex's gradients are dense: the executor
  // all-reduces them); Unimplemented.
  Status AllGather(std::string_view name, const PlaceTensors& inputs,
                   const PlaceTensors& outputs) override;

  // The rank names given at Connect ("node 'b'" in messages).
  const std::string& rank_name(int rank) const { return rank_names_[rank]; }

 private:
  GlooCommunicator() = default;
  struct Entry;
  // The staging memory of fused bucket `name` (made the first time, or
  // again when its dtype, size or place changed).
  StatusOr<Entry*> StagingFor(std::string_view name, DType dtype, int64_t count, Place place);
  Status Run(Collective collective, std::string_view name, TensorGroups groups, int root);
  Status Failed(Collective collective, std::string_view name, const std::string& what);

  std::shared_ptr<gloo::Context> context_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<std::string> rank_names_;
  std::map<std::string, std::unique_ptr<Entry>, std::less<>> entries_;
  Tensor scratch_;           // a reduce's sum on the ranks other than root
  uint32_t next_tag_ = 1;    // Gloo's tag per call: the same sequence on every rank
  std::mutex mu_;       // guards broken_ and interrupted_
  Status broken_;       // set by the first Gloo failure: the context is closed
  Status interrupted_;  // set by Interrupt until Resume
};

}  // namespace parex
