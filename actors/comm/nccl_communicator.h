// NcclCommunicator: the collectives of places on distinct GPUs of this
// process through NCCL (DESIGN.md §3.4), one NCCL rank per place.
//
// A call returns once its work is queued, as the in-device backend's does:
// the collective actor's stream (the communication stream of place 0,
// `streams[0]`) is where a call starts and ends. Every other rank's stream
// first waits for what was queued on streams[0] before the call (the stream
// actor made streams[0] wait for the producers of the gradients), the NCCL
// calls of every rank go out inside one ncclGroupStart/End (several groups
// of a fused bucket included), and streams[0] then waits for every rank's
// stream, so the event the stream actor records after the call is the
// collective's completion on every GPU, which the consumers wait for.
//
// Sums are NCCL's (ring or tree, fixed by NCCL's choice for the size and
// topology, not by timing). Places sharing one GPU (`cuda:0x2`) are the
// in-device backend's: NCCL refuses two ranks on one device.
//
// Failures: NCCL reports some errors only after a call returned (a peer
// gone, a device fault). Health() asks every communicator
// (ncclCommGetAsyncError); the executor polls it while it waits for a
// step's device work and stops waiting after PAREX_NCCL_TIMEOUT_MS. An
// error found by a call or by Health() aborts the NCCL communicators
// (ncclCommAbort, which also frees a stuck kernel) and every later call
// returns that error naming the place: NCCL communicators cannot be
// revived, so the executor must be made again. Interrupt (a step aborted
// by its caller, or its device work timed out) does the same, since work
// already queued may wait forever; Resume cannot undo it.
//
// All-gather (sparse gradients: rows differ per rank) is not implemented:
// an error naming the variable.
//
// Thread-safety: one call at a time (communicator.h); Interrupt and
// Health from any thread.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actors/comm/communicator.h"
#include "kernels/device_context.h"

namespace parex {

class NcclCommunicator final : public Communicator {
 public:
  // One rank per place (cuda places on distinct devices, rank i =
  // places[i]); `streams[i]` (not owned, outliving the communicator) is a
  // CUDA context on places[i] where rank i's NCCL work is queued. Errors
  // name the places and NCCL's message.
  static StatusOr<std::unique_ptr<NcclCommunicator>> Create(
      std::vector<Place> places, std::vector<DeviceContext*> streams);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  const char* backend() const override { return "nccl"; }
  int world_size() const override { return static_cast<int>(places_.size()); }
  int local_size() const override { return world_size(); }
  int first_local_rank() const override { return 0; }
  Place place(int rank) const override { return places_[rank]; }
  bool asynchronous() const override { return true; }
  Status Health() override;
  void Interrupt(const Status& reason) override;

  Status AllReduce(std::string_view name, TensorGroups groups) override;
  Status Reduce(std::string_view name, TensorGroups groups, int root) override;
  Status Broadcast(std::string_view name, TensorGroups groups,
                   int root) override;
  Status AllGather(std::string_view name, const PlaceTensors& inputs,
                   const PlaceTensors& outputs) override;

 private:
  struct Comms;  // the NCCL handles (kept out of this header)

  NcclCommunicator(std::vector<Place> places,
                   std::vector<DeviceContext*> streams);

  // Ok, or why calls fail (aborted).
  Status Usable() const;
  // Aborts the NCCL communicators (once) and keeps `error` as the answer
  // of every later call. Returns it.
  Status Break(const Status& error);
  // Runs the checks, the fork, `issue` for every (group, rank) inside one
  // NCCL group, and the join. `issue` returns NCCL's result as an int.
  template <typename Issue>
  Status Run(Collective collective, std::string_view name, TensorGroups groups,
             int root, Issue issue);

  std::vector<Place> places_;
  std::vector<DeviceContext*> streams_;
  std::unique_ptr<Comms> comms_;
  // fork_: recorded on streams_[0] before a call; join_[i]: on streams_[i]
  // after it (each made by the context it is recorded on).
  std::unique_ptr<Event> fork_;
  std::vector<std::unique_ptr<Event>> join_;
  mutable std::mutex mu_;
  Status broken_;  // guarded by mu_: NCCL aborted, forever
};

// Registers NcclCommunicator::Create as the cuda places' device
// communicator (device_communicators.h). Idempotent.
void RegisterNcclCommunicator();

}  // namespace parex
