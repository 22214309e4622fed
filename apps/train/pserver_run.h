// A node's part in parameter-server training (issue 32): the program placed
// over the topology's trainers and pservers (graph/builder/placement.h),
// who holds which parameter rows (the executor's PserverCommunicator reads
// that), and the optimizer state the pservers hold, brought to every node
// when the run saves or ends.
//
// A pserver keeps each persistable of a parameter split in row blocks as
// its own block: the scope's variable is a view of those rows of the whole
// tensor, so its update ops run on its rows only. The whole tensors come
// back to the scope at Release (the end of the run).
//
// Gather (every node, at the same step): each persistable the pservers hold
// (a parameter, its accumulators, a learning rate), or each row block of
// it, is broadcast from its holder to every node: at the end, so that the
// saved model written by the first trainer holds the state of the last
// step, optimizer state included; after a resume, without the prefetched
// tables, so that the trainers hold the pservers' parameters.
//
// Prefetched tables (graph/ssa/placed_exchanges.h): a trainer's startup
// does not make them or their row-shaped optimizer state (InitSkips), and
// it never holds them while it trains; a pserver keeps its own blocks of
// them (not a view of the whole); at the end the blocks go to the first
// trainer alone, which writes the model (the nodes' parameter digests
// leave the tables out).
//
// Checkpoints: each pserver writes what it holds (its row blocks) itself,
// into DIR/ckpt-<step>.<node> (WriteShard, before the first trainer writes
// DIR/ckpt-<step> without them and completes the checkpoint), and reads it
// back at --resume (LoadShard).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "actors/comm/communicator.h"
#include "actors/comm/pserver_communicator.h"
#include "base/status.h"
#include "graph/builder/placement.h"
#include "graph/ir/program.h"
#include "kernels/scope.h"
#include "proto/topology_io.h"

namespace parex::train {

// Whether the topology has pserver nodes (parameter-server training).
bool HasPservers(const Topology& topology);

class PserverRun {
 public:
  // Places `main` (in place) for `topology`'s trainers and pservers and
  // works out node `node`'s part. Errors name the node, op or parameter: a
  // topology whose first node is a pserver (the first trainer writes the
  // model and checkpoints), a pserver with places on no CPU, a parameter in
  // row blocks whose update is not elementwise.
  static StatusOr<std::unique_ptr<PserverRun>> Plan(Program* main,
                                                    const Topology& topology,
                                                    const std::string& node,
                                                    int max_staleness = 0);

  bool pserver() const { return pserver_; }
  int max_staleness() const { return max_staleness_; }
  const PlacementReport& report() const { return report_; }
  // By parameter and by gradient name (PserverCommunicator's).
  const std::map<std::string, PserverShard>& shards() const { return shards_; }
  std::vector<int> trainer_ranks() const { return trainers_; }
  // "pserver ps0 holds 3 parameters (101770 elements) of 6" or
  // "trainer t0 sends 6 gradients to 2 pservers".
  std::string Describe() const;

  // The tables the trainers prefetch (every node's list).
  const std::vector<std::string>& prefetched() const { return prefetched_; }
  // The tables and their row-shaped optimizer state (moments): what lives
  // on the pservers alone, a block on each holder (every node's list).
  const std::vector<std::string>& table_state() const { return table_state_; }
  // What this node's startup does not make: the table state (a trainer),
  // or what other pservers hold of it (a pserver).
  std::vector<std::string> InitSkips() const;
  // Every persistable the pservers hold (what the first trainer's part of
  // a checkpoint leaves out).
  std::vector<std::string> HeldNames() const;

  // A pserver: its row blocks become its scope's variables (views).
  Status HoldRows(Scope* scope);
  // Every node: the pservers' state on every node (see above); when
  // `tables`, the prefetched tables too, on the first trainer only (which
  // writes the model; the other trainers never hold them).
  Status Gather(Scope* scope, Communicator* cross, bool tables);

  // A pserver: its part of the checkpoint of step `step` in `dir`, written
  // whole (a temporary directory renamed), keeping its newest keep + 1
  // (the first trainer's newest `keep` complete ones always have theirs).
  StatusOr<std::string> WriteShard(const std::string& dir, int64_t step,
                                   int keep, const Scope& scope) const;
  // A pserver: its part of the checkpoint of step `step` into `scope`
  // (before HoldRows). Errors name the node, the directory and the
  // variable: a part missing, or written for another placement.
  Status LoadShard(const std::string& dir, int64_t step, Scope* scope) const;
  // A pserver: the whole tensors back in its scope.
  void Release(Scope* scope);

 private:
  // WriteShard's cleanup in `dir`: this node's interrupted parts, and its
  // parts older than the newest keep + 1.
  void PruneShards(const std::string& dir, int keep) const;
  // A persistable the pservers hold: its holders' ranks (row blocks when
  // `rows` > 0; else the first holder's copy is the one).
  struct Held {
    std::vector<int> ranks;
    int64_t rows = 0;
    DType dtype = DType::kUndefined;  // the program's declaration
    Dims dims;
  };
  PserverRun() = default;
  Status FindHeld(const Block& block, const Topology& topology);
  // Plan's parts: this node's rank and role and the topology's trainers and
  // pservers (a usage error where the first node is a pserver or a pserver
  // is not on a CPU place); each placed parameter's shard, its gradient's
  // with it; the prefetched tables and their row-shaped optimizer state.
  Status SetRoles(const Topology& topology, const std::string& node,
                  PlacementOptions* options);
  void MapShards(const Block& block, const Topology& topology,
                 const PlacementOptions& options);
  Status FindTableState(const Block& block);
  Tensor* Whole(Scope* scope, const std::string& name);
  Status GatherTable(Scope* scope, Communicator* cross, const std::string& name,
                     const Held& held);

  // A held persistable's rows on this pserver ([0, 0): held whole;
  // nullopt: not held here).
  std::optional<std::pair<int64_t, int64_t>> RowsHere(const Held& held) const;

  bool pserver_ = false;
  int max_staleness_ = 0;
  std::vector<std::string> prefetched_, table_state_;
  bool IsTableState(const std::string& name) const;
  int rank_ = 0;
  std::string node_;
  PlacementReport report_;
  std::vector<int> trainers_;
  std::map<std::string, PserverShard> shards_;
  std::map<std::string, Held> held_;     // by name (sorted)
  std::map<std::string, Tensor> whole_;  // a pserver's, of its row views
};

}  // namespace parex::train
