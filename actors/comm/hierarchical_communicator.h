// HierarchicalCommunicator: the collectives of one node's places in a
// cluster: inside the node by an InProcessCommunicator over its places, across
// nodes by a communicator with one rank per node (Gloo), then back inside
// the node (DESIGN.md §4, "hierarchical").
//
// Ranks are the cluster's places in topology order: this node's places are
// ranks [first_local_rank, first_local_rank + local_size). Each call passes
// this node's places' tensors, like the in-process backend.
//
//   AllReduce: the node's places are summed onto its first place in place
//     order, that sum is all-reduced across nodes (Gloo's ring), and the
//     result is copied to the node's other places. So a sum over the cluster
//     is (node 0's ((p0 + p1) + ...)) + (node 1's ...) + ... in the ring's
//     fixed order: the same bits run to run, within rounding of a single
//     process's ((p0 + p1) + p2) + ... over the same places.
//   Reduce(root): the node's places are summed onto its local place `root`
//     and that is all-reduced across nodes, so every node's local owner
//     holds the cluster's sum. Reduce mode's optimizer then runs on every
//     node's owner on the same sum, and
//   Broadcast(root) copies the local owner's value to the node's places
//     only: the owners of all nodes hold the same value by then.
//     REQUIRES: a Broadcast's root already agrees across nodes (Reduce
//     mode's parameters; use the cross communicator for anything else).
//   AllGather: inside one node only (Unimplemented across nodes).
//
// The caller (one detached collective actor) issues calls in the graph's
// fixed order, which is the same on every node.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "actors/comm/communicator.h"
#include "actors/comm/in_process_communicator.h"

namespace parex {

class HierarchicalCommunicator final : public Communicator {
 public:
  // `local_places`: this node's places; `cross`: one rank per node, this
  // node's rank being cross->first_local_rank(); `world_size`: places of all
  // nodes; `first_local_rank`: the global rank of local_places[0].
  // REQUIRES: cross->local_size() == 1.
  HierarchicalCommunicator(std::vector<Place> local_places,
                           std::shared_ptr<Communicator> cross, int world_size,
                           int first_local_rank);

  // "in_process+gloo", "in_process+mpi".
  const char* backend() const override { return backend_.c_str(); }
  int world_size() const override { return world_size_; }
  int local_size() const override { return local_.world_size(); }
  int first_local_rank() const override { return first_local_rank_; }
  // Local ranks are this node's places; others are named by their index.
  Place place(int rank) const override;
  bool blocking() const override { return cross_->blocking(); }
  void Interrupt(const Status& reason) override { cross_->Interrupt(reason); }
  void Resume() override { cross_->Resume(); }

  Status AllReduce(std::string_view name, TensorGroups groups) override;
  Status Reduce(std::string_view name, TensorGroups groups, int root) override;
  Status Broadcast(std::string_view name, TensorGroups groups,
                   int root) override;
  Status AllGather(std::string_view name, const PlaceTensors& inputs,
                   const PlaceTensors& outputs) override;

  Communicator& cross() const { return *cross_; }

 private:
  // Sums onto local place `root`, then all-reduces that across nodes.
  Status ReduceThenCross(std::string_view name, TensorGroups groups, int root);

  InProcessCommunicator local_;
  std::shared_ptr<Communicator> cross_;
  std::string backend_;
  int world_size_;
  int first_local_rank_;
  // The root's tensor of each group, rebuilt per call (capacity kept).
  std::vector<PlaceTensors> root_groups_;
};

}  // namespace parex
