#include "actors/runner_state.h"

#include <caf/send.hpp>

namespace parex {

void RunnerState::SendRun(caf::local_actor* self, int from, int to,
                          int64_t epoch_id) {
  const uint64_t flow =
      tracing() ? trace->RecordSend(user_step.load(std::memory_order_relaxed),
                                    from, to)
                : 0;
  // A collective goes to the shared queue, where an idle worker takes it at
  // once, rather than to the sender's next-job box (resume-here), where it
  // would wait for the sender's chain to end: the collective actor issues
  // its communicator's collectives one by one, so a late one delays all
  // that follow.
  caf::local_actor* host =
      graph->nodes[to].communicator >= 0 ? nullptr : self;
  pool.Send(host, receiver[to],
            RunNode{epoch_id, static_cast<int32_t>(to),
                    static_cast<int32_t>(from), flow});
}

bool RunnerState::Signal(caf::local_actor* self, int id, int64_t epoch_id,
                         int skip) {
  bool collective = false;
  for (int succ : graph->nodes[id].successors) {
    if (succ == skip) continue;
    if (pending[succ].fetch_sub(1, std::memory_order_acq_rel) == 1) {
      SendRun(self, id, succ, epoch_id);
      collective = collective || graph->nodes[succ].communicator >= 0;
    }
  }
  return collective;
}

void RunnerState::Finish(caf::local_actor* self, int n, int64_t epoch_id,
                         int last_node) {
  if (remaining.fetch_sub(n, std::memory_order_acq_rel) != n) return;
  if (tracing()) {
    // The coordinator is receiver -1; its receipt is the end of the step.
    const uint64_t flow = trace->RecordSend(
        user_step.load(std::memory_order_relaxed), last_node, -1);
    trace->RecordReceive(flow, -1, trace->Now());
  }
  pool.Send(self, coordinator, StepDone{epoch_id});
}

void RunnerState::Fail(caf::local_actor* self, int64_t epoch_id, int node,
                       const Status& s) {
  failed.store(true, std::memory_order_release);
  StepError error{epoch_id, static_cast<int32_t>(node),
                  static_cast<int32_t>(s.code()), s.message()};
  (void)self;  // errors are rare: a plain (allocating) CAF send
  caf::anon_send(coordinator, std::move(error));
  WakeWaiters();
}

bool RunnerState::RunTask(caf::local_actor* self, int id, int64_t epoch_id,
                          uint64_t flow, TraceSpan* out) {
  const bool traced = tracing();
  const int64_t step = user_step.load(std::memory_order_relaxed);
  TraceSpan& span = *out;
  span.node = -1;
  if (traced) {
    span.begin_ns = trace->Now();
    if (flow != 0) trace->RecordReceive(flow, id, span.begin_ns);
  }
  span.ok = !failed.load(std::memory_order_acquire);
  if (span.ok) {
    Status s = graph->task(id, step);
    if (!s.ok()) {
      span.ok = false;
      Fail(self, epoch_id, id, s);
    }
  }
  if (traced) {
    span.task_end_ns = trace->Now();
    span.step = step;
    span.node = id;
    span.bytes = graph->nodes[id].bytes;
  }
  return span.ok;
}

void RunnerState::EndSpan(TraceSpan* span) {
  if (span->node < 0 || !tracing()) return;
  span->end_ns = trace->Now();
  trace->RecordSpan(*span);
}

void RunnerState::IssueOnStream(caf::local_actor* self, int id,
                                int64_t epoch_id) {
  const TaskNode& node = graph->nodes[id];
  if (stream_wait == StreamWaitStrategy::kWait) {
    // A full Wait waits for everything issued on the producer's stream so
    // far, not only for the producer.
    const std::vector<int>& inputs = cross_stream_inputs[id];
    for (size_t k = 0; k < inputs.size(); ++k) {
      const int s = graph->nodes[inputs[k]].stream_actor;
      wait_marks[id][k] =
          s >= 0 ? stream_issued[s].load(std::memory_order_acquire) : 0;
    }
  }
  stream_issued[node.stream_actor].fetch_add(1, std::memory_order_acq_rel);
  const uint64_t flow =
      tracing() ? trace->RecordSend(user_step.load(std::memory_order_relaxed),
                                    id, id)
                : 0;
  pool.Send(self, stream_actors[node.stream_actor],
            StreamWork{epoch_id, static_cast<int32_t>(id),
                       static_cast<int32_t>(id), flow});
}

void RunnerState::CompleteEvent(int id, int stream, int64_t epoch_id) {
  {
    std::lock_guard<std::mutex> lock(event_mu);
    completed[id].store(epoch_id, std::memory_order_release);
    if (stream >= 0) stream_done[stream].fetch_add(1, std::memory_order_acq_rel);
  }
  event_cv.notify_all();
}

void RunnerState::WakeWaiters() {
  if (graph->streams.empty()) return;
  { std::lock_guard<std::mutex> lock(event_mu); }
  event_cv.notify_all();
}

}  // namespace parex
