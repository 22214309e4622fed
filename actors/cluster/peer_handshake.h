// PeerHandshake: the joining thread's side of the handshake (the node actor,
// actors/cluster/node_actor.h, answers the peers' side). A node connects to
// the nodes ranked after it and proves itself to each (Challenge, Proof:
// actors/cluster/node_messages.h); it waits for the nodes ranked before it to
// connect and prove themselves, then proves itself to each of them; then it
// waits until every peer proved itself. Proving to rank 0 measures the clock
// offset.
//
// Every wait ends by one deadline, connect_timeout_ms after the handshake
// began, or earlier when a peer refused this node's identity (NodeShared::
// refused): the error then says so. Not thread-safe: the joining thread's.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "actors/cluster/node_actor.h"
#include "base/status.h"
#include "proto/topology_io.h"

namespace parex {

class PeerHandshake {
 public:
  // `node_actor` is this node's (published already); `info` its identity
  // (EncodeInfo). The system and `shared` must outlive the handshake.
  PeerHandshake(caf::actor_system& system, const Topology& topology, int rank,
                std::shared_ptr<NodeShared> shared, caf::actor node_actor,
                std::string info);

  // Meets every peer, both ways (the three steps above, in order).
  Status Run();

  // After Run: each peer's node actor, and the session token it gave this
  // node (what this node shows it from now on).
  const std::map<std::string, caf::actor>& peers() const { return peers_; }
  const std::map<std::string, std::string>& tokens() const { return tokens_; }
  // Rank 0's steady clock minus this node's (µs) and the round trip it was
  // measured over (0 on rank 0).
  int64_t clock_offset_us() const { return clock_offset_us_; }
  int64_t clock_rtt_us() const { return clock_rtt_us_; }

 private:
  using Clock = std::chrono::steady_clock;

  // 1. Connects to each node ranked after this one and proves this node.
  Status ConnectToLaterNodes();
  // 2. Waits for each node ranked before this one to prove itself, then
  //    proves this node to it.
  Status AnswerEarlierNodes();
  // 3. Waits until every peer proved itself to this node.
  Status AwaitEveryProof();

  // The node actor at `peer`'s address, retried every 50 ms until the
  // deadline (or a refusal seen meanwhile).
  StatusOr<caf::actor> Connect(const TopologyNode& peer);
  // Proves this node to `peer` (challenge, HMAC, identity); keeps the token
  // it gives and, for rank 0, the clock offset. Each request waits until
  // the deadline at most.
  Status Prove(const TopologyNode& peer, const caf::actor& handle);
  // Waits until `done` holds of the shared state (called under its lock),
  // a proof was refused, or the deadline passed (the error names `what`).
  Status WaitFor(const std::function<bool()>& done, const std::string& what);
  // The time left to the deadline (at least 1 ms).
  std::chrono::milliseconds Left() const;

  caf::actor_system& system_;
  const Topology& topology_;
  const int rank_;
  const TopologyNode& me_;
  const std::string label_;  // "node 'name'"
  std::shared_ptr<NodeShared> shared_;
  caf::actor node_actor_;
  const std::string info_;
  const Clock::time_point deadline_;
  const std::string timeout_text_;  // " within connect_timeout_ms ... of path"
  caf::scoped_actor self_;

  std::map<std::string, caf::actor> peers_;
  std::map<std::string, std::string> tokens_;
  int64_t clock_offset_us_ = 0;
  int64_t clock_rtt_us_ = 0;
};

}  // namespace parex
