// Cluster: this process as one node of a topology (DESIGN.md §4).
//
// Join starts the node's own actor system (CAF's middleman), publishes its
// node actor on the node's topology address only, and meets every peer:
// a node connects to the nodes ranked after it, and each pair proves the
// cluster secret to the other (challenge-response HMAC-SHA-256) with its
// identity (parex's version, the program's fingerprint, the training
// options, the topology's fingerprint), which must equal the verifier's. A
// mismatch fails Join on both nodes with a message naming the node and what
// differs. Ranks are the topology's order. Then the Gloo communicator
// (one rank per node) is connected through a rendezvous store kept by rank
// 0's node actor (CafStore), and everything after that (parameters, the
// gradients, the metrics) goes through Gloo.
//
// Every wait is bounded: connect_timeout_ms for the handshake, the
// collective timeout for Gloo calls. CAF-free (apps/ use it).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/comm/communicator.h"
#include "actors/comm/pserver_communicator.h"
#include "base/status.h"
#include "kernels/scope.h"
#include "proto/topology_io.h"

namespace parex {

class GlooCommunicator;

class Cluster {
 public:
  // `identity`: what must agree across nodes, key by key ("program",
  // "options", ...); "version" and "topology" are added here.
  static StatusOr<std::unique_ptr<Cluster>> Join(
      const Topology& topology, const std::string& node,
      std::map<std::string, std::string> identity);
  ~Cluster();

  const Topology& topology() const { return topology_; }
  int rank() const { return rank_; }
  int size() const { return static_cast<int>(topology_.nodes.size()); }
  const TopologyNode& node() const { return topology_.nodes[rank_]; }
  // Places of all nodes, and the global index of this node's first place.
  int world_places() const { return topology_.TotalPlaces(); }
  int first_place() const { return topology_.FirstPlace(rank_); }
  // Rank 0's steady clock minus this node's, in µs, measured at the
  // handshake (0 on rank 0); and the round trip it was measured over.
  int64_t clock_offset_us() const { return clock_offset_us_; }
  int64_t clock_rtt_us() const { return clock_rtt_us_; }

  // The executor's communicator for this node's places: in-process inside
  // the node, Gloo across nodes (HierarchicalCommunicator).
  std::shared_ptr<Communicator> MakeCommunicator() const;
  // Parameter-server training (issue 32): the executor's communicator for
  // this node (actors/comm/pserver_communicator.h), point to point over the
  // same Gloo ranks; `shards` says which pservers hold what. A pserver runs
  // on its first place.
  std::shared_ptr<Communicator> MakePserverCommunicator(
      std::map<std::string, PserverShard> shards, int max_staleness) const;
  // One rank per node (Gloo).
  Communicator& cross() const;

  // Rank 0's value of every persistable of `scope` named in `names` (sorted
  // order, every node the same list) replaces this node's.
  Status BroadcastPersistables(Scope* scope,
                               const std::vector<std::string>& names);
  // values[i] becomes the sum over nodes of values[i].
  Status SumAcrossNodes(std::vector<double>* values, const std::string& what);

  // Seconds this node spent inside cross-node collectives so far: the
  // steps' (the graph's gradient buckets and other collective ops) and the
  // cluster's own (SumAcrossNodes, barriers, BroadcastPersistables).
  struct CollectiveTime {
    double step_s = 0;
    double own_s = 0;
  };
  CollectiveTime collective_time() const;
  // Returns once every node called it (or the collective timeout passed).
  Status Barrier(const std::string& what);
  // Called once (from another thread) when a peer is lost: its process
  // exited or crashed (its connection closed) or it fell silent for the
  // topology's heartbeat_timeout_ms. The status names the node and what this
  // node was doing. Every cross-node call in progress or to come fails with
  // it already; the handler aborts what else waits (the executor's step).
  void SetLostHandler(std::function<void(const Status&)> handler);
  // This node is about to exit with `error`: each peer hears it first
  // (waiting up to 500 ms for each to acknowledge), so that they name
  // the reason, not just a node that went.
  void AnnounceFailure(const Status& error);
  // This node is about to exit with an error every node reached at the same
  // point from the same values (a diverged loss): a barrier, after which a
  // peer that goes is no longer lost. No node's exit then interrupts a peer
  // still finishing the call the error came from; each reports its own.
  // An error (a peer that did not agree, or is gone) means: announce.
  Status FailTogether();
  // What this node knows about a failed cross-node call #seq: the lost
  // nodes, else a stall report (which nodes had not joined the call, asked
  // of each over the nodes' connections).
  std::string Explain(int64_t seq, bool timed_out);

  // The last call: a barrier (Gloo's or MPI's), then every node tells rank
  // 0's node actor it is done and waits until all have, so that no node
  // closes its connections while a peer still reads its last message (or,
  // under MPI, sees the connection close before it knew the barrier
  // ended). Errors of
  // the second part are only logged (training is over).
  Status Leave();

 private:
  Cluster() = default;
  struct Impl;
  class OwnCalls;
  std::unique_ptr<Impl> impl_;
  Topology topology_;
  int rank_ = 0;
  int64_t clock_offset_us_ = 0;
  int64_t clock_rtt_us_ = 0;
};

// parex's version string (what the handshake compares).
std::string ParexVersion();

}  // namespace parex
