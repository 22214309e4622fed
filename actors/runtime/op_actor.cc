#include "actors/runtime/op_actor.h"

#include <string>

namespace parex {

OpActor::OpActor(caf::actor_config& config, RunnerState* state, int chain)
    : caf::event_based_actor(config), state_(state), chain_(chain) {}

caf::behavior OpActor::make_behavior() {
  return {
      [this](const RunNode& m) {
        RunChain(state_->chain_pos[m.node], m.step, m.flow);
      },
      [this](const InputReady& m) {
        RunnerState& rt = *state_;
        const std::vector<int>& nodes = rt.chains[chain_];
        if (m.node != nodes.front()) {
          rt.Fail(
              this, m.step, m.node,
              Internal("op actor of " + rt.graph->nodes[nodes.front()].label +
                       ": an input-ready message for node " +
                       std::to_string(m.node) +
                       ", which is not the head of its chain"));
          return;
        }
        if (rt.tracing() && m.flow != 0) {
          rt.trace->RecordReceive(m.flow, m.node, rt.trace->Now());
        }
        if (rt.pending[m.node].fetch_sub(1, std::memory_order_acq_rel) == 1) {
          RunChain(0, m.step, 0);
        }
      },
      [this](const AbortStep&) { ++aborts_seen_; },
  };
}

void OpActor::RunChain(int first, int64_t epoch_id, uint64_t flow) {
  RunnerState& rt = *state_;
  const std::vector<int>& nodes = rt.chains[chain_];
  int synchronous = 0;
  for (size_t k = first; k < nodes.size(); ++k) {
    const int id = nodes[k];
    const int next = k + 1 == nodes.size() ? -1 : nodes[k + 1];
    TraceSpan span;
    if (rt.graph->nodes[id].stream_actor >= 0) {
      // Asynchronous place: issue the work; its stream finishes it. The
      // successors are told now, as a device's launches return at once; a
      // consumer on another stream waits for this node's event.
      if (rt.tracing() && k == static_cast<size_t>(first) && flow != 0) {
        rt.trace->RecordReceive(flow, id, rt.trace->Now());
      }
      rt.IssueOnStream(this, id, epoch_id);
    } else {
      rt.RunTask(this, id, epoch_id, k == static_cast<size_t>(first) ? flow : 0,
                 &span);
      ++synchronous;
    }
    const bool yield =
        rt.Signal(this, id, epoch_id, next, next < 0) && next >= 0;
    if (yield) {
      // A blocking collective was sent its RunNode: the rest of the chain
      // goes to the shared queue (host null), whichever worker is free runs
      // it next.
      const uint64_t f =
          rt.tracing()
              ? rt.trace->RecordSend(
                    rt.user_step.load(std::memory_order_relaxed), id, next)
              : 0;
      rt.pool.Send(nullptr, rt.receiver[next],
                   RunNode{epoch_id, static_cast<int32_t>(next),
                           static_cast<int32_t>(id), f});
    }
    rt.EndSpan(&span);
    if (yield) break;
  }
  if (synchronous > 0) rt.Finish(this, synchronous, epoch_id, nodes.back());
}

}  // namespace parex
