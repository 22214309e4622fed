// CollectiveActor: issues the collectives of one communicator (DESIGN.md
// §3.4), one actor per communicator.
//
// Every rank of a communicator must issue the same collectives in the same
// order, or the ranks wait on each other forever. The order is fixed by the
// plan: the collective nodes of the communicator in node-id order (the order
// the multi-device builder inserted them, the program's gradient order, the
// same on every rank). A collective becomes ready (a RunNode, or its last
// InputReady) in whatever order its inputs come; the collectives are issued
// strictly in the fixed order, one that is ready before its turn held back,
// and after each its consumers (the op actors of the optimizer ops) are told
// that their input is ready. The order's state is RunnerState's
// CollectiveOrder.
//
// A backend whose calls block (Gloo, NCCL waiting for a peer) gets a detached
// actor, with a thread of its own, so a blocked call never occupies a
// scheduler worker: every RunNode of its collectives comes here and only
// this actor issues them. The in-process backend does not block: an op
// actor that makes one of its collectives ready issues it in its turn
// itself, on its worker, without a message (the local shortcut, like the
// pending counts, of the RunNode to this actor, which then only receives
// the InputReady messages from outside the process).
//
// The calls themselves go through the task function (the executor's op
// handle, which calls the Communicator interface): this actor never names a
// backend.
#pragma once

#include <caf/event_based_actor.hpp>
#include <cstdint>
#include <vector>

#include "actors/runtime/messages.h"
#include "actors/runtime/runner_state.h"

namespace parex {

class CollectiveActor : public caf::event_based_actor {
 public:
  CollectiveActor(caf::actor_config& config, RunnerState* state,
                  int communicator);

  caf::behavior make_behavior() override;

 private:
  RunnerState* state_;
  int communicator_;
};

}  // namespace parex
