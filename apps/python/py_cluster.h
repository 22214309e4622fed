// parex.Cluster: this Python process as one node of a topology (DESIGN.md §4),
// so that a training script runs one node per machine: Join at
// construction (blocking until every node came, the GIL released), then the
// ParallelExecutors given `num_trainers` / `trainer_id` run this node's
// places of the topology with their collectives across the nodes, starting
// from rank 0's persistables. A lost peer aborts the training executor's
// step and ends the process naming the node (ClusterSession's policy: a
// Gloo call cannot be cancelled).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "actors/executor/parallel_executor.h"
#include "apps/python/py_common.h"
#include "apps/train/cluster_session.h"
#include "proto/topology_io.h"

namespace parex::python {

class PyCluster {
 public:
  // `node` "" under mpirun with a topology of collective MPI: the node of
  // the process's rank (train::NodeOfThisProcess).
  PyCluster(const std::string& topology_path, const std::string& node);
  ~PyCluster();

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(topology_.nodes.size()); }
  const std::string& node() const { return node_; }
  // This node's places (the topology's), all nodes' places, and the global
  // index of this node's first place.
  std::vector<Place> places() const { return topology_.nodes[rank_].places; }
  int world_places() const { return topology_.TotalPlaces(); }
  int first_place() const { return topology_.FirstPlace(rank_); }

  // An executor's settings on this node; Unimplemented (naming the node)
  // after Leave.
  Status Configure(BuildStrategy* build, ExecutionStrategy* exec) const;
  // Rank 0's persistables of `scope` on every node.
  Status BroadcastPersistables(Scope* scope);
  // A lost peer aborts `pe`'s step (the last executor registered).
  void AbortOnLoss(ParallelExecutor* pe);
  void Forget(ParallelExecutor* pe);
  // Leaves with the other nodes (idempotent); the executors made on this
  // node cannot run steps any more.
  void Leave();

 private:
  Topology topology_;
  std::string node_;
  int rank_ = 0;
  std::unique_ptr<train::ClusterSession> session_;
  ParallelExecutor* watched_ = nullptr;
  bool left_ = false;
};

void BindCluster(py::module_& m);

}  // namespace parex::python
