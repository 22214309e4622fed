#include "actors/runtime/collective_actor.h"

#include <string>

namespace parex {

CollectiveActor::CollectiveActor(caf::actor_config& config, RunnerState* state,
                                 int communicator)
    : caf::event_based_actor(config),
      state_(state),
      communicator_(communicator) {}

caf::behavior CollectiveActor::make_behavior() {
  return {
      [this](const RunNode& m) {
        state_->CollectiveReady(this, m.node, m.step, m.flow);
      },
      [this](const InputReady& m) {
        RunnerState& rt = *state_;
        if (m.node < 0 || m.node >= rt.graph->size() ||
            rt.graph->nodes[m.node].communicator != communicator_) {
          rt.Fail(this, m.step, m.node,
                  Internal("collective actor of communicator " +
                           std::to_string(communicator_) +
                           ": input-ready for a node it does not issue"));
          return;
        }
        if (rt.tracing() && m.flow != 0) {
          rt.trace->RecordReceive(m.flow, m.node, rt.trace->Now());
        }
        if (rt.pending[m.node].fetch_sub(1, std::memory_order_acq_rel) == 1) {
          rt.CollectiveReady(this, m.node, m.step, 0);
        }
      },
      [](const AbortStep&) {
        // The runner's `failed` flag already makes the rest of the step's
        // collectives skip; a call blocked in the backend was interrupted by
        // the coordinator (TaskGraph::interrupt), since this actor cannot
        // read its mailbox while it is blocked.
      },
  };
}

}  // namespace parex
