// CollectiveActor: issues the collectives of one communicator (DESIGN.md
// §3.4), one actor per communicator.
//
// Every rank of a communicator must issue the same collectives in the same
// order, or the ranks wait on each other forever. The order is fixed by the
// plan: the collective nodes of the communicator in node-id order (the order
// the multi-device builder inserted them, the program's gradient order, the
// same on every rank). The actor receives a RunNode (or InputReady messages)
// for a collective once all its inputs are ready, in whatever order they
// come; it issues the collectives strictly in the fixed order, holding back
// one that is ready before its turn, and after each tells the consumers
// (the op actors of the optimizer ops) that their input is ready.
//
// A backend whose calls block (Gloo, NCCL waiting for a peer) gets a detached
// actor, with a thread of its own, so a blocked call never occupies a
// scheduler worker; the in-process backend does not block, and its actor is
// scheduled like the op actors (ActorRunner decides from
// TaskGraph::communicators[c].blocking).
//
// The calls themselves go through the task function (the executor's op
// handle, which calls the Communicator interface): this actor never names a
// backend.
#pragma once

#include <cstdint>
#include <vector>

#include <caf/event_based_actor.hpp>

#include "actors/messages.h"
#include "actors/runner_state.h"

namespace parex {

class CollectiveActor : public caf::event_based_actor {
 public:
  CollectiveActor(caf::actor_config& config, RunnerState* state,
                  int communicator);

  caf::behavior make_behavior() override;

 private:
  // Node `node` of epoch `epoch_id` is ready: issue every collective whose
  // turn has come.
  void Ready(int node, int64_t epoch_id, uint64_t flow);
  void Issue(int node, int64_t epoch_id, uint64_t flow);

  RunnerState* state_;
  int communicator_;
  std::vector<int> order_;     // this communicator's nodes, in issue order
  std::vector<int> position_;  // node -> index in order_, -1 if not ours
  // Per position: ready in the current round (and the flow that said so).
  std::vector<char> ready_;
  std::vector<uint64_t> flows_;
  size_t next_ = 0;            // the position whose turn it is
};

}  // namespace parex
