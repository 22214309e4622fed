// CoordinatorActor: one per runner (DESIGN.md §3.4). It starts steps (resets
// the per-step counts, runs the begin hook: feeding and scope bookkeeping in
// the executor, then sends the roots their RunNode), counts the nodes still
// pending (StepDone when the last finished), turns the first StepError of a
// step into the one failure Run returns, runs the end hook (the executor's
// drop-scope count and fetch gathering) and answers Run.
//
// Abort (AbortStep, from any thread through ActorRunner::Abort: a peer gone, a
// deadline passed): the coordinator records the reason as the step's error
// unless an error came first, sets the step's failed flag so every node not
// yet started is skipped, interrupts blocked work (TaskGraph::interrupt: a
// collective waiting for a peer returns), tells every actor, runs the end hook
// and answers Run at once. The step's nodes still drain (skipped); the next
// step starts only once they have (a StepStart meanwhile waits), after
// TaskGraph::resume, so it starts clean.
#pragma once

#include <caf/event_based_actor.hpp>
#include <cstdint>

#include "actors/runtime/messages.h"
#include "actors/runtime/runner_state.h"
#include "actors/runtime/step_hooks.h"

namespace parex {

class CoordinatorActor : public caf::event_based_actor {
 public:
  CoordinatorActor(caf::actor_config& config, RunnerState* state,
                   StepControl* control);

  caf::behavior make_behavior() override;

 private:
  void Start(int64_t user_step);
  void Abort(const AbortStep& m);
  // The end hook (`ran`: nodes were started), then the answer to Run.
  void EndStep(bool ran);

  RunnerState* state_;
  StepControl* control_;
  int64_t epoch_ = 0;      // the current (or last) step's epoch
  bool running_ = false;   // started, not answered
  Status error_;           // the current step's first error
  bool draining_ = false;  // answered after an abort, nodes still running
  bool deferred_ = false;  // a StepStart that waits for the drain
  int64_t deferred_step_ = 0;
  bool resume_ = false;  // call TaskGraph::resume before the next step
};

}  // namespace parex
