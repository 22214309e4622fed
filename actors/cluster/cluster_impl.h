// Cluster::Impl: what a Cluster holds of CAF and Gloo, and the steps of
// Cluster::Join that set it up (actors/cluster/cluster.cc); what a lost peer
// does and the stall report are in actors/cluster/cluster_failures.cc.
// Internal to actors/cluster/ (it includes CAF; cluster.h does not).
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "actors/cluster/cluster.h"
#include "actors/cluster/node_actor.h"
#include "actors/cluster/node_messages.h"
#include "actors/comm/gloo_communicator.h"

namespace parex {

class PeerHandshake;

struct Cluster::Impl {
  // `topology` is copied: the actors that report a lost peer use it until
  // ~Impl has waited for them, after the Cluster's own copy is gone.
  Impl(const Topology& topology, int rank);
  ~Impl();

  // --- The steps of Join, in order. ---
  // The state this node's actors share with it (NodeShared), with the
  // identity every peer must equal and the lost-peer handler (OnLost).
  void Share(const std::map<std::string, std::string>& identity);
  // This node's own actor system: the middleman, CAF's OpenSSL transport
  // when the topology has tls (its material checked first), heartbeats
  // every heartbeat_timeout_ms / 4 and a connection silent for
  // heartbeat_timeout_ms dropped. Waits for nothing.
  Status StartSystem();
  // Spawns the node actor (guarded: SpawnGuarded) and publishes it on the
  // topology's address of this node only; fails at once when it cannot
  // listen there.
  Status Publish();
  // Keeps the handshake's peers and tokens, then starts the watcher: from
  // now on a peer that goes is lost (and named). Waits for nothing.
  void StartWatcher(const PeerHandshake& handshake);
  // Where the rendezvous keys live: rank 0's node actor (`holder`), and
  // the token this node shows it.
  Status ChooseHolder();
  // "node 'a'", ... in rank order (how the backends name ranks).
  std::vector<std::string> RankNames() const;
  // Gloo, one rank per node, meeting through the rendezvous keys of rank
  // 0's node actor (CafStore); `cluster` answers Gloo's failed calls
  // (Explain). Each Gloo wait is bounded by connect_timeout_ms (the store)
  // and collective_timeout_ms (the calls).
  Status ConnectGloo(Cluster* cluster);
  // MPI instead (a topology of collective MPI: nodes started by mpirun,
  // each the topology's node of its rank); the cluster's other traffic
  // stays on CAF.
  Status ConnectMpi();
  // Progress for the peers' stall reports and the step account: each
  // cross-node call's number, name and time (the backends' observer).
  CollectiveObserver Observer();
  // Fails when a peer was lost before Gloo was connected.
  Status NoneLostWhileConnecting();

  // --- Failures (cluster_failures.cc). ---
  // A lost peer (the watcher's or a peer's report, from an actor's thread):
  // recorded once, then every wait of this node on the cluster is
  // interrupted with an error naming it and where this node was.
  void OnLost(const std::string& node, const std::string& why);
  // The lost nodes, named, each with why ("" when none is).
  // REQUIRES: shared->mu held.
  std::string LostNodesLocked() const;
  // Where every peer is relative to cross-node call #seq, asked over the
  // nodes' own connections (not Gloo's), all at once, each given a second.
  std::string StallReport(int64_t seq, bool timed_out);

  // Each peer's answer to a ProgressQuery by rank (nullopt: none within
  // 1 s), all asked at once.
  std::vector<std::pair<int, std::optional<Progress>>> AskProgress();

  // Keeps `actor` and a future set when it ends (see the shutdown race in
  // cluster.cc).
  void Witness(const caf::strong_actor_ptr& actor);
  void Witness(const caf::actor& actor);
  // Waits until every witnessed actor ended or `deadline` passed (logged).
  void AwaitWitnessed(std::chrono::steady_clock::time_point deadline);
  // Keeps the system's BASP broker referenced until the process ends (a
  // CAF 0.17.6 bug, explained in cluster.cc).
  static void KeepBaspBroker(caf::actor_system& system);

  const Topology topology;
  const int rank;
  const std::string label;  // "node 'name'"

  std::unique_ptr<caf::actor_system_config> config;
  std::unique_ptr<caf::actor_system> system;
  caf::actor node_actor;
  caf::actor watcher;  // monitors the peers once the handshake is done
  // What a lost peer interrupts (set once they exist; `mu` guards them).
  std::mutex mu;
  std::shared_ptr<Communicator> cross_target;
  std::function<void(const Status&)> on_lost;
  std::shared_ptr<NodeShared> shared;
  std::map<std::string, caf::actor> peers;  // name -> node actor
  // The nodes' collectives (one rank per node): Gloo's or MPI's; `gloo`
  // is set for Gloo only (parameter servers need its point to point).
  std::shared_ptr<Communicator> cross;
  std::shared_ptr<GlooCommunicator> gloo;
  uint16_t port = 0;
  caf::actor holder;  // rank 0's node actor (the rendezvous keys)
  std::map<std::string, std::string>
      tokens;         // peer -> the token it gave this node
  std::string token;  // what this node shows it
  // Set as each witnessed actor ends (see Witness).
  std::vector<std::future<void>> ended;
};

}  // namespace parex
