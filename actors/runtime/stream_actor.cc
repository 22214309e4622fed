#include "actors/runtime/stream_actor.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

namespace parex {

StreamActor::StreamActor(caf::actor_config& config, RunnerState* state,
                         int stream)
    : caf::event_based_actor(config),
      state_(state),
      stream_(stream),
      clock_(state->graph->streams.size(), 0) {}

caf::behavior StreamActor::make_behavior() {
  return {
      [this](const StreamWork& m) { Work(m.node, m.step, m.flow); },
      [](const AbortStep&) {
        // Waits end when the runner's `failed` flag is set (the coordinator
        // wakes them); the step's remaining work is skipped.
      },
  };
}

Status StreamActor::WaitForInput(int node, size_t k, int64_t epoch_id) {
  RunnerState& rt = *state_;
  const int producer = rt.cross_stream_inputs[node][k];
  const TaskGraph& g = *rt.graph;
  if (DeviceContext* device = g.streams[stream_].device) {
    // A device stream. The producer's work may not be queued yet (its op
    // actor issued it and went on): wait on the host until its stream
    // actor queued it and recorded its event, which takes no device time;
    // then queue the wait on the device (kEvent: nothing blocks), or drain
    // the producer's stream from here (kWait).
    {
      std::unique_lock<std::mutex> lock(rt.event_mu);
      rt.event_cv.wait(lock, [&] {
        return rt.completed[producer].load(std::memory_order_acquire) >=
                   epoch_id ||
               rt.failed.load(std::memory_order_acquire);
      });
    }
    if (rt.failed.load(std::memory_order_acquire)) return Status::Ok();
    const Status s =
        rt.stream_wait == StreamWaitStrategy::kEvent
            ? device->WaitEvent(rt.node_events[producer].get())
            : g.streams[g.nodes[producer].stream_actor].device->Synchronize();
    if (!s.ok()) {
      return s.WithContext(g.nodes[node].label + " waiting for " +
                           g.nodes[producer].label);
    }
    std::lock_guard<std::mutex> lock(rt.event_mu);
    JoinClock(producer);
    return Status::Ok();
  }
  std::unique_lock<std::mutex> lock(rt.event_mu);
  if (rt.stream_wait == StreamWaitStrategy::kEvent) {
    rt.event_cv.wait(lock, [&] {
      return rt.completed[producer].load(std::memory_order_acquire) >=
                 epoch_id ||
             rt.failed.load(std::memory_order_acquire);
    });
  } else {
    const int s = g.nodes[producer].stream_actor;
    const int64_t mark = rt.wait_marks[node][k];
    rt.event_cv.wait(lock, [&] {
      return rt.stream_done[s].load(std::memory_order_acquire) >= mark ||
             rt.failed.load(std::memory_order_acquire);
    });
  }
  JoinClock(producer);
  return Status::Ok();
}

void StreamActor::JoinClock(int producer) {
  // The wait orders everything the producer was ordered after.
  const size_t num_streams = clock_.size();
  const int64_t* theirs = &state_->node_clock[producer * num_streams];
  for (size_t s = 0; s < num_streams; ++s) {
    clock_[s] = std::max(clock_[s], theirs[s]);
  }
}

void StreamActor::Work(int node, int64_t epoch_id, uint64_t flow) {
  RunnerState& rt = *state_;
  const std::vector<int>& inputs = rt.cross_stream_inputs[node];
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k] == rt.skip_wait_producer && node == rt.skip_wait_consumer) {
      continue;  // the test hook: this wait was removed
    }
    if (Status s = WaitForInput(node, k, epoch_id); !s.ok()) {
      rt.Fail(this, epoch_id, node, s);
      break;
    }
  }
  bool race = false;
  const size_t num_streams = clock_.size();
  int unordered = -1;
  if (!rt.failed.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(rt.event_mu);
    for (int producer : inputs) {
      const int s = rt.graph->nodes[producer].stream_actor;
      if (rt.completed[producer].load(std::memory_order_acquire) < epoch_id ||
          rt.node_clock[producer * num_streams + s] > clock_[s]) {
        unordered = producer;
        break;
      }
    }
  }
  if (unordered >= 0) {
    const TaskGraph& g = *rt.graph;
    rt.Fail(this, epoch_id, node,
            Internal("race on stream " + g.streams[stream_].name + ": " +
                     g.nodes[node].label + " started before " +
                     g.nodes[unordered].label + " on stream " +
                     g.streams[g.nodes[unordered].stream_actor].name +
                     " completed (no wait for its event)"));
    race = true;
  }
  const int64_t delay_ns = rt.graph->streams[stream_].delay_ns;
  if (delay_ns > 0 && !race) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(delay_ns));
  }
  ++clock_[stream_];
  TraceSpan span;
  if (!race && rt.RunTask(this, node, epoch_id, flow, &span)) {
    if (DeviceContext* device = rt.graph->streams[stream_].device) {
      // Consumers on other streams wait for this event.
      if (Status s = device->RecordEvent(rt.node_events[node].get()); !s.ok()) {
        rt.Fail(this, epoch_id, node,
                s.WithContext(rt.graph->nodes[node].label));
      }
    }
  }
  rt.EndSpan(&span);
  {
    std::lock_guard<std::mutex> lock(rt.event_mu);
    std::copy(clock_.begin(), clock_.end(),
              rt.node_clock.begin() + node * num_streams);
  }
  rt.CompleteEvent(node, stream_, epoch_id);
  rt.Finish(this, 1, epoch_id, node);
}

}  // namespace parex
