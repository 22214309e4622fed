// The multi-device pass's builder (multi_device_builder.h), shared by the
// files that define its parts: multi_device_builder.cc (replication,
// collectives, buckets, hazard edges, fetches) and
// multi_device_builder_placed.cc (a placed program's exchanges with the
// pservers). Not for other callers: BuildMultiDeviceGraph is the interface.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/ir/program.h"
#include "graph/ssa/build_strategy.h"
#include "graph/ssa/placed_exchanges.h"
#include "graph/ssa/ssa_graph.h"

namespace parex::multi_device {

using ReduceStrategy = BuildStrategy::ReduceStrategy;

// One pass over block 0 in program order; see multi_device_builder.h.
class Builder {
 public:
  Builder(const Program& program, const std::vector<Place>& places,
          const std::string& loss_name, const BuildStrategy& strategy)
      : block_(program.global_block()),
        strategy_(strategy),
        graph_(std::make_shared<const Program>(program), places),
        n_(static_cast<int>(places.size())),
        owned_numel_(places.size(), 0) {
    graph_.loss_name = loss_name;
    graph_.strategy = strategy;
    reduce_mode_ = strategy.reduce == ReduceStrategy::kReduce;
    bool all_cpu = true;
    for (const Place& p : places) all_cpu = all_cpu && p.is_cpu();
    graph_.shared_parameters =
        reduce_mode_ && strategy.share_cpu_parameters && all_cpu;
    placed_ = !strategy.placed_node.empty();
    if (placed_) graph_.shared_parameters = false;
  }

  Status Build(const std::vector<std::string>& fetch_names);
  SsaGraph Take() { return std::move(graph_); }

 private:
  Status AddProgramOp(int index);
  // `owner_only`: Reduce mode runs the op on this place alone.
  Status AddComputation(int index, int place, bool owner_only = false);
  Status AddScaleLossGrad(int index);
  // An op that must precede the op being added, and why.
  struct Hazard {
    int from;
    ControlReason reason;
  };
  // Wires an op: `op` reads the newest version of each of `reads` and writes
  // a new version of each of `writes` (pairs of name and place). Data
  // hazards with the versions it reads or replaces are ordered by control
  // vars, each added only when the graph does not already order the two
  // ops: write-after-read (readers of the replaced version), write-after-
  // write (its generator) and, for storages shared by every place,
  // read-after-write (the last writer on another place). Every edge goes
  // from an older op to a newer one, and candidates are taken newest first,
  // so no edge added here is implied by the others.
  void Wire(int op, const std::vector<std::pair<std::string, int>>& reads,
            const std::vector<std::pair<std::string, int>>& writes);

  Status MergeGradient(const std::string& param, const std::string& grad,
                       int producer);
  void AddCollective(SsaOpKind kind, std::vector<std::string> grads, int root);
  void FlushBucket();
  // Reduce mode without shared parameters: the owner's updated `param`
  // broadcast to every place.
  void Broadcast(const std::string& param);
  void AddBroadcasts();
  Status AddFetches(const std::vector<std::string>& fetch_names);
  void AddSequentialOrder();
  Status CheckGradReads(int index, int place);
  // A placed program (BuildStrategy::placed_node, placed_exchanges.h): a
  // trainer's sends of gradients (after the op `index`), a pserver's
  // receives of them (first), and the parameters both ways (last).
  void AddPlacedSends(int index);
  Status AddPserverRecvs();
  void AddPlacedBroadcasts();
  // A prefetched table (placed_exchanges.h): a trainer's prefetch before
  // the program op p.before; a pserver's answer, first of all, reads the
  // table the last step's update left (Wire orders this step's after it).
  void AddPrefetch(const PlacedPrefetch& p);
  std::vector<int> AllPlaces() const {
    std::vector<int> all(n_);
    for (int p = 0; p < n_; ++p) all[p] = p;
    return all;
  }

  const Block& block_;
  BuildStrategy strategy_;
  SsaGraph graph_;
  int n_;
  bool reduce_mode_ = false;
  bool placed_ = false;
  // A placed program's exchanges with the pservers, in order.
  std::vector<PlacedExchange> exchanges_;
  std::vector<PlacedPrefetch> prefetches_;
  std::vector<int64_t> owned_numel_;
  std::map<std::string, int> owner_;  // param and grad name -> place
  // Reduce mode: vars that only an owner-placed op wrote -> that place.
  std::map<std::string, int> local_place_;
  std::map<std::string, int> grad_index_;  // grad name -> graph_.grads
  std::vector<std::string> bucket_;        // open fused bucket
  int64_t bucket_bytes_ = 0;
  std::vector<std::string> program_fetches_;
  // Shared storages: the op that wrote each one last.
  std::map<std::string, int> shared_writer_;
};

}  // namespace parex::multi_device
