// MpiCommunicator: the collectives across processes started by mpirun, one
// rank per process (a node of the cluster), through OpenMPI (issue 33). A
// topology picks it with `collective: MPI`; the cluster's handshake,
// heartbeats and failure reports still run over the nodes' CAF
// connections, and only the collectives move to MPI. On one machine OpenMPI
// sums through shared memory (its vader transport): 4-64 KiB all-reduces
// take microseconds where a TCP ring takes a hundred; between machines it
// takes TCP (or UCX, where OpenMPI was built with it).
//
// Each call passes this rank's tensor of each group (local_size() == 1) and
// returns once every rank made the matching call. Calls are made in one
// order on every rank (the plan's fixed order) and never at once: MPI is
// initialized at MPI_THREAD_SERIALIZED and a mutex keeps the calls of this
// process's threads (a worker's, the training loop's) one at a time.
//
// blocking() is false although a call waits for its peers: OpenMPI waits by
// polling (its progress engine spins, or yields when oversubscribed), so the
// waiting thread holds its core whichever thread it is. Issued on the worker
// that made the collective ready (collective_actor.h), a 4 KiB all-reduce
// costs what MPI_Allreduce costs; a detached collective actor would add two
// thread hand-offs to each call, more than the call itself at that size.
// No node's wait needs its own workers: peers reach the matching call by
// their own progress, and one collective runs at a time.
//
// Memory and sums, as GlooCommunicator (cross_node_calls.h): one tensor is
// all-reduced in place; a fused bucket's tensors are copied end to end into
// the name's staging memory and left viewing it, so later calls are in
// place too. MPI_Allreduce's sum gives every rank the same bits (OpenMPI
// reduces each element along one path and sends the result on), and the
// same inputs give the same bits run to run. A reduce is an all-reduce of
// a copy, kept on the root only; broadcasts are MPI_Bcast of the bytes.
//
// Errors come back as Status naming the collective, variable and node
// (MPI_ERRORS_RETURN on a communicator of its own); a peer that dies is
// mostly seen by mpirun first, which ends the job. Interrupt fails the
// calls after it; a call inside MPI cannot be woken, so a node whose peer
// is lost exits (as with Gloo: ClusterSession's lost-peer handler).
// MPI_Finalize runs at process exit.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "actors/comm/communicator.h"

namespace parex {

// The rank and size mpirun gave this process (OpenMPI's
// OMPI_COMM_WORLD_RANK/SIZE, else a PMI launcher's PMI_RANK/SIZE), and how
// many of the ranks run on this machine (OMPI_COMM_WORLD_LOCAL_SIZE or
// MPI_LOCALNRANKS; 1 when not said), or nothing when it was not started by
// mpirun. Reads the environment only.
struct MpirunRank {
  int rank = 0;
  int size = 1;
  int local_size = 1;
};
std::optional<MpirunRank> StartedByMpirun();

class MpiCommunicator final : public Communicator {
 public:
  // Joins MPI as rank `rank` of `size` (initializing it once per process),
  // on a communicator of its own. `rank_names` name the ranks in messages
  // (node names). Errors: not started by mpirun, or mpirun's rank and size
  // are not the topology's (FailedPrecondition, saying how to start it).
  static StatusOr<std::shared_ptr<MpiCommunicator>> Connect(
      int rank, int size, std::vector<std::string> rank_names);
  ~MpiCommunicator() override;

  const char* backend() const override { return "mpi"; }
  int world_size() const override { return size_; }
  int local_size() const override { return 1; }
  int first_local_rank() const override { return rank_; }
  Place place(int rank) const override { return Place::CPU(rank); }
  bool blocking() const override { return false; }  // see above
  void Interrupt(const Status& reason) override;
  void Resume() override;

  Status AllReduce(std::string_view name, TensorGroups groups) override;
  // Rank `root` gets the sum; the others' tensors are left as they were.
  Status Reduce(std::string_view name, TensorGroups groups, int root) override;
  Status Broadcast(std::string_view name, TensorGroups groups,
                   int root) override;
  // Unimplemented (dense gradients are all-reduced), as with Gloo.
  Status AllGather(std::string_view name, const PlaceTensors& inputs,
                   const PlaceTensors& outputs) override;

  // Hears every call begin (entering) and end: its number, kind and name.
  // Set before the first call; called on the calling thread.
  void SetObserver(CollectiveObserver observer) {
    observer_ = std::move(observer);
  }

 private:
  MpiCommunicator() = default;
  struct State;
  Status Run(Collective collective, std::string_view name, TensorGroups groups,
             int root);
  Status RunCall(Collective collective, std::string_view name,
                 TensorGroups groups, int root);
  // A failed MPI call `code` as a Status naming the collective and node.
  Status Failed(Collective collective, std::string_view name, int code);

  std::unique_ptr<State> state_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<std::string> rank_names_;
  CollectiveObserver observer_;
  int64_t seq_ = 0;
  std::mutex call_mu_;  // one call at a time (MPI_THREAD_SERIALIZED)
  std::mutex mu_;       // guards interrupted_ and broken_
  Status interrupted_;
  Status broken_;  // the first MPI failure: later calls fail with it
  // Whether either is set (written under mu_): a call reads this alone.
  std::atomic<bool> stopped_{false};
};

}  // namespace parex
