// InDeviceCommunicator: the collectives of places whose tensors one device
// context can read and write: several places on one GPU (`cuda:0x2`; NCCL
// refuses two ranks on one GPU), or CPU places (the tests run it there
// against InProcessCommunicator).
//
// Sums run the device's registered `sum` kernel on `context`'s stream, over
// the ranks in rank order ((x_0 + x_1) + x_2 ..., the communicator contract,
// so a run repeats bit for bit and matches the in-process backend); copies
// are CopyOnDevice on the same stream. An all-reduce is one pass of the
// context's SumToAll (the same additions) where it has one (CUDA). A call
// returns once its work is queued: on an asynchronous device the consumers on
// other streams wait for the collective's event (the stream actors do).
// All-gather (sparse gradients) is not implemented: an error naming the
// variable.
//
// Thread-safety: one call at a time (communicator.h); `context` is used only
// inside calls, by the calling thread.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/comm/communicator.h"
#include "graph/ir/program.h"
#include "kernels/device_context.h"
#include "kernels/scope.h"

namespace parex {

class InDeviceCommunicator final : public Communicator {
 public:
  // `context` (not owned, outlives the communicator) runs every call.
  // REQUIRES: places is not empty.
  InDeviceCommunicator(std::vector<Place> places, DeviceContext* context);

  const char* backend() const override { return "in_device"; }
  int world_size() const override { return static_cast<int>(places_.size()); }
  int local_size() const override { return world_size(); }
  int first_local_rank() const override { return 0; }
  Place place(int rank) const override { return places_[rank]; }

  Status AllReduce(std::string_view name, TensorGroups groups) override;
  Status Reduce(std::string_view name, TensorGroups groups, int root) override;
  Status Broadcast(std::string_view name, TensorGroups groups,
                   int root) override;
  Status AllGather(std::string_view name, const PlaceTensors& inputs,
                   const PlaceTensors& outputs) override;

 private:
  // *out = tensors[0] + tensors[1] + ... (rank order) by the sum kernel.
  // `out` may be tensors[0].
  Status Sum(const PlaceTensors& tensors, Tensor* out);
  // Every tensor but `root`'s becomes a copy of it.
  Status CopyFrom(const PlaceTensors& tensors, int root);

  std::vector<Place> places_;
  DeviceContext* context_;
  // One-op programs `sum` (X: x_0..x_{n-1}, Out: out) and their scopes.
  Program program_;
  OpDesc* sum_into_out_ = nullptr;  // Out is its own variable
  OpDesc* sum_into_x0_ = nullptr;   // Out is x_0 (in place)
  Scope scope_;
  Tensor scratch_;  // Reduce to a root other than 0
  // SumToAll's buffers, kept: a steady all-reduce allocates nothing.
  std::vector<const void*> sum_inputs_;
  std::vector<void*> sum_outputs_;
};

}  // namespace parex
