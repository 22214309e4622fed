#include "actors/collective_actor.h"

#include <string>

namespace parex {

CollectiveActor::CollectiveActor(caf::actor_config& config, RunnerState* state,
                                 int communicator)
    : caf::event_based_actor(config),
      state_(state),
      communicator_(communicator) {
  const TaskGraph& g = *state->graph;
  position_.assign(g.size(), -1);
  for (int id = 0; id < g.size(); ++id) {
    if (g.nodes[id].communicator != communicator) continue;
    position_[id] = static_cast<int>(order_.size());
    order_.push_back(id);
  }
  ready_.assign(order_.size(), 0);
  flows_.assign(order_.size(), 0);
}

caf::behavior CollectiveActor::make_behavior() {
  return {
      [this](const RunNode& m) { Ready(m.node, m.step, m.flow); },
      [this](const InputReady& m) {
        RunnerState& rt = *state_;
        if (m.node < 0 || m.node >= rt.graph->size() || position_[m.node] < 0) {
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
          Ready(m.node, m.step, 0);
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

void CollectiveActor::Ready(int node, int64_t epoch_id, uint64_t flow) {
  const int pos = position_[node];
  ready_[pos] = 1;
  flows_[pos] = flow;
  while (next_ < order_.size() && ready_[next_]) {
    ready_[next_] = 0;
    const int id = order_[next_];
    const uint64_t f = flows_[next_];
    ++next_;
    if (next_ == order_.size()) next_ = 0;  // the step's last: next round
    Issue(id, epoch_id, f);
  }
}

void CollectiveActor::Issue(int id, int64_t epoch_id, uint64_t flow) {
  RunnerState& rt = *state_;
  if (rt.graph->nodes[id].stream_actor >= 0) {
    if (rt.tracing() && flow != 0) {
      rt.trace->RecordReceive(flow, id, rt.trace->Now());
    }
    rt.IssueOnStream(this, id, epoch_id);
    rt.Signal(this, id, epoch_id, -1);
    return;
  }
  TraceSpan span;
  rt.RunTask(this, id, epoch_id, flow, &span);
  rt.Signal(this, id, epoch_id, -1);
  rt.EndSpan(&span);
  rt.Finish(this, 1, epoch_id, id);
}

}  // namespace parex
