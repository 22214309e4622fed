#include "actors/runtime/runner_state.h"

#include <caf/send.hpp>

namespace parex {

void RunnerState::SendRun(caf::local_actor* self, int from, int to,
                          int64_t epoch_id, bool here) {
  const uint64_t flow =
      tracing() ? trace->RecordSend(user_step.load(std::memory_order_relaxed),
                                    from, to)
                : 0;
  const int comm = graph->nodes[to].communicator;
  if (comm >= 0 && !graph->communicators[comm].blocking) {
    CollectiveReady(self, to, epoch_id, flow);
    return;
  }
  // Host `self`: the receiver goes to this worker's next-job box, to run
  // here once the sender returns (resume-here); host null: to the shared
  // queue, where an idle worker takes it at once. A blocking communicator's
  // collective always goes the shared way, to its detached actor.
  // With caller_runs every receiver stays with the sender's unit: the one
  // thread that runs the step, whose OpenMP team does the parallel work.
  caf::local_actor* host = (here || caller_runs) && comm < 0 ? self : nullptr;
  pool.Send(host, receiver[to],
            RunNode{epoch_id, static_cast<int32_t>(to),
                    static_cast<int32_t>(from), flow});
}

bool RunnerState::Signal(caf::local_actor* self, int id, int64_t epoch_id,
                         int skip, bool here) {
  // Collectives issued here run after the other successors are on their
  // way (another worker may start those meanwhile); the first successor may
  // wait in this worker's box only if nothing runs here before it.
  constexpr int kMaxDeferred = 8;
  int deferred[kMaxDeferred];
  int num_deferred = 0;
  here = here && !feeds_local_collective[id];
  bool blocking = false;
  for (int succ : graph->nodes[id].successors) {
    if (succ == skip) continue;
    // A successor of one input is ready now (its count, reset each step,
    // is nobody else's to lower).
    if (graph->nodes[succ].num_predecessors != 1 &&
        pending[succ].fetch_sub(1, std::memory_order_acq_rel) != 1) {
      continue;
    }
    const int comm = graph->nodes[succ].communicator;
    if (comm >= 0 && !graph->communicators[comm].blocking &&
        num_deferred < kMaxDeferred) {
      deferred[num_deferred++] = succ;
      continue;
    }
    SendRun(self, id, succ, epoch_id, here);
    blocking = blocking || comm >= 0;
  }
  for (int k = 0; k < num_deferred; ++k) {
    SendRun(self, id, deferred[k], epoch_id, false);
  }
  return blocking;
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

namespace {

// The communicator order this thread is draining, if any.
thread_local const CollectiveOrder* t_draining = nullptr;

}  // namespace

void RunnerState::CollectiveReady(caf::local_actor* self, int id,
                                  int64_t epoch_id, uint64_t flow) {
  CollectiveOrder& o = *collective_order[graph->nodes[id].communicator];
  const int pos = o.position[id];
  CollectiveOrder::Slot& slot = o.slots[pos];
  slot.flow.store(flow, std::memory_order_relaxed);
  slot.epoch.store(epoch_id, std::memory_order_relaxed);
  slot.ready.store(1, std::memory_order_release);
  // Made ready by a collective this thread is issuing: the drain below (an
  // outer frame) looks at the flags again before it lets go, and a flag not
  // yet in turn is reached by whoever asks for the one before it.
  if (t_draining == &o) return;
  if (o.asks.fetch_add(1, std::memory_order_acq_rel) != 0) return;
  // This actor drains: every ask is answered by a pass over the flags made
  // after it (the asks' read-modify-writes order the flags before it).
  const CollectiveOrder* outer = t_draining;  // another communicator's
  t_draining = &o;
  int answered = 1;
  for (;;) {
    // The collectives run here count towards the step's end once a pass
    // is over (one read-modify-write, not one each): until then the step
    // cannot end, so a pass never mixes two steps.
    int finished = 0;
    int64_t finished_epoch = 0;
    int last = -1;
    while (o.slots[o.next].ready.load(std::memory_order_acquire) != 0) {
      const size_t p = o.next;
      CollectiveOrder::Slot& slot = o.slots[p];
      slot.ready.store(0, std::memory_order_relaxed);
      const uint64_t f = slot.flow.load(std::memory_order_relaxed);
      const int64_t e = slot.epoch.load(std::memory_order_relaxed);
      o.next = p + 1 == o.order.size() ? 0 : p + 1;  // last: next round
      if (IssueCollective(self, o.order[p], e, f)) {
        ++finished;
        finished_epoch = e;
        last = o.order[p];
      }
    }
    if (finished > 0) Finish(self, finished, finished_epoch, last);
    const int left =
        o.asks.fetch_sub(answered, std::memory_order_acq_rel) - answered;
    if (left == 0) break;
    answered = left;
  }
  t_draining = outer;
}

bool RunnerState::IssueCollective(caf::local_actor* self, int id,
                                  int64_t epoch_id, uint64_t flow) {
  if (graph->nodes[id].stream_actor >= 0) {
    if (tracing() && flow != 0) trace->RecordReceive(flow, id, trace->Now());
    IssueOnStream(self, id, epoch_id);
    Signal(self, id, epoch_id, -1, false);
    return false;
  }
  TraceSpan span;
  RunTask(self, id, epoch_id, flow, &span);
  Signal(self, id, epoch_id, -1, false);
  EndSpan(&span);
  return true;
}

void RunnerState::IssueOnStream(caf::local_actor* self, int id,
                                int64_t epoch_id) {
  const TaskNode& node = graph->nodes[id];
  std::lock_guard<std::mutex> issuing(issue_mu);
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
      tracing()
          ? trace->RecordSend(user_step.load(std::memory_order_relaxed), id, id)
          : 0;
  pool.Send(self, stream_actors[node.stream_actor],
            StreamWork{epoch_id, static_cast<int32_t>(id),
                       static_cast<int32_t>(id), flow});
}

void RunnerState::CompleteEvent(int id, int stream, int64_t epoch_id) {
  {
    std::lock_guard<std::mutex> lock(event_mu);
    completed[id].store(epoch_id, std::memory_order_release);
    if (stream >= 0)
      stream_done[stream].fetch_add(1, std::memory_order_acq_rel);
  }
  event_cv.notify_all();
}

void RunnerState::WakeWaiters() {
  if (graph->streams.empty()) return;
  { std::lock_guard<std::mutex> lock(event_mu); }
  event_cv.notify_all();
}

}  // namespace parex
