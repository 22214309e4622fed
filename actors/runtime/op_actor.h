// OpActor: runs one chain of op handles on one place (DESIGN.md §3.4).
//
// An op actor fires when all input-ready messages of its chain's head have
// arrived for a step: either the RunNode sent by the producer that brought
// the shared pending count to zero (the local shortcut), or InputReady
// messages, each of which decrements that same count (how an input made in
// another process, on another device or stream arrives). It then runs the
// chain's nodes in order: each node's task (or, on an asynchronous place, the
// node's work issued on its stream actor), then the node's successors count
// one input ready each; the chain's next node runs at once, since ChainNext
// (task_graph.h) made sure it is ready the moment the one before it ends.
// Every node still gets its own span in the trace.
//
// Collectives: a node that makes a collective of an in-process (non-blocking)
// communicator ready issues it in its turn at once, on this worker
// (RunnerState::CollectiveReady), as the chain would run its next node, so a
// collective (on the critical path: the optimizer ops wait for it) never
// waits in a queue. A node that makes a blocking communicator's collective
// ready yields: the actor sends itself the rest of the chain (a RunNode for
// the next node) through the shared queue, behind the collective's RunNode
// to its detached actor, and returns.
//
// AbortStep: the step's remaining nodes are skipped (the runner's `failed`
// flag, which the coordinator sets before telling the actors, is what the
// running chain reads between nodes).
#pragma once

#include <caf/event_based_actor.hpp>
#include <cstdint>

#include "actors/runtime/messages.h"
#include "actors/runtime/runner_state.h"

namespace parex {

class OpActor : public caf::event_based_actor {
 public:
  OpActor(caf::actor_config& config, RunnerState* state, int chain);

  caf::behavior make_behavior() override;

  // Steps this actor was told to abort (tests).
  int64_t aborts_seen() const { return aborts_seen_; }

 private:
  // Runs the chain from its node `first` (the head, or where it yielded)
  // for epoch `epoch_id`; `flow` is the message that fired it.
  void RunChain(int first, int64_t epoch_id, uint64_t flow);

  RunnerState* state_;
  int chain_;
  int64_t aborts_seen_ = 0;
};

}  // namespace parex
