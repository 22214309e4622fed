// PeerHandshake: the joining thread's side of the handshake (the node actor,
// actors/cluster/node_actor.h, answers the peers' side). A node connects to
// the nodes ranked after it and proves itself to each (Challenge, Proof:
// actors/cluster/node_messages.h); it waits for the nodes ranked before it to
// connect and prove themselves, then proves itself to each of them; then it
// waits until every peer proved itself. Proving to rank 0 measures the clock
// offset.
//
// A verdict counts only when the peer signed it over this node's challenge
// with the cluster secret (node_messages.h, the trust rule). Whatever else
// comes back (an unsigned refusal, an error, a dropped connection) is logged
// with the address and noted, and this node tries again (after 100 ms,
// doubling to 1 s): the real peer may come. Every wait ends by one deadline,
// connect_timeout_ms after the handshake began, whose error names what was
// noted, or earlier when a peer that proved the secret refused this node's
// identity (its verdict, or NodeShared::refused): the error then says so.
// Not thread-safe: the joining thread's.
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
#include <vector>

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

  // Proves this node to the node actor `reach` returns for `peer` until a
  // verdict the peer signed accepts it; `reach` is asked again before each
  // try (it may fail: its error ends the handshake).
  Status ProveUntilAccepted(const TopologyNode& peer,
                            const std::function<StatusOr<caf::actor>()>& reach);
  // The node actor at `peer`'s address, retried every 50 ms until the
  // deadline (or a refusal seen meanwhile).
  StatusOr<caf::actor> Connect(const TopologyNode& peer);
  // One proof of this node to `peer` (challenge, HMAC, identity, and a
  // challenge of this node's for the verdict). True: a verdict the peer
  // signed accepted it (its token kept and, for rank 0, the clock offset).
  // False: nothing this node can trust came back (noted) or the peer asked
  // for a new challenge. An error: a peer that proved the secret refused
  // this node. Each request waits until the deadline at most.
  StatusOr<bool> Prove(const TopologyNode& peer, const caf::actor& handle);
  // Logs (once) and keeps `what` a process at `peer`'s address did.
  void NoteUnproven(const std::string& what);
  // What was noted, for an error ("" when nothing was).
  std::string Noted() const;
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
  std::vector<std::string> unproven_;  // NoteUnproven (at most 8)
  int64_t clock_offset_us_ = 0;
  int64_t clock_rtt_us_ = 0;
};

}  // namespace parex
