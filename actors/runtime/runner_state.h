// RunnerState: what the actors of one ActorRunner share (DESIGN.md §3.4):
// the plan (the task graph, its chains, who receives each node's messages)
// and the per-step local shortcut of the messages (pending counts producers
// decrement, the count of nodes still to finish, the "step failed" flag).
//
// Every actor kind keeps its own state in its own class (op_actor.h,
// collective_actor.h, stream_actor.h, coordinator_actor.h); this struct is
// only the part that is shared memory inside one process, and every use of it
// stands for a message of actors/runtime/messages.h:
//   - a producer decrementing a consumer's pending count stands for an
//     InputReady; the one that brings it to zero sends the RunNode;
//   - an actor decrementing `remaining` stands for its share of StepDone; the
//     last sends the StepDone;
//   - `failed` stands for the AbortStep every actor is also sent.
//
// Thread-safety: the plan is immutable once the actors run; the atomics are
// the per-step state; the coordinator resets them before a step's first
// message (message passing orders the reset before every read).
#pragma once

#include <atomic>
#include <caf/actor.hpp>
#include <caf/local_actor.hpp>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "actors/runtime/message_pool.h"
#include "actors/runtime/task_graph.h"
#include "actors/runtime/trace_recorder.h"
#include "base/status.h"

namespace parex {

// The fixed issue order of one communicator's collectives (its collective
// actor's state, collective_actor.h): its nodes in node-id order, a ready
// flag per position, and whose turn it is. Draining is lock-free and has one
// drainer at a time: whoever marks a collective ready asks for a drain;
// the first asker drains (issues every collective whose turn has come, in
// order) until no asks are left, so a flag set while it drains is never
// lost.
struct CollectiveOrder {
  std::vector<int> order;     // the communicator's nodes, in issue order
  std::vector<int> position;  // node -> index in order, -1 if not ours
  // Per position, together (one cache line touched per collective): its
  // ready flag and the RunNode that made it ready (its flow, its epoch: a
  // drain may outlast the step and issue the next step's).
  struct Slot {
    std::atomic<uint64_t> flow{0};
    std::atomic<int64_t> epoch{0};
    std::atomic<uint8_t> ready{0};
  };
  std::unique_ptr<Slot[]> slots;
  size_t next = 0;  // the drainer's: the position whose turn it is
  std::atomic<int> asks{0};
};

struct RunnerState {
  // ---- the plan ----
  std::shared_ptr<const TaskGraph> graph;
  // Chains: maximal paths u -> v = ChainNext(graph)[u]; one op actor each.
  std::vector<std::vector<int>> chains;
  std::vector<int> chain_of;   // node -> its chain, -1 for collectives
  std::vector<int> chain_pos;  // node -> its index in its chain
  std::vector<int> roots;  // nodes without predecessors the coordinator starts
  // Per node: one of its successors is a collective of a non-blocking
  // communicator (issued by whoever makes it ready, CollectiveReady).
  std::vector<char> feeds_local_collective;
  // Per node: its predecessors on another stream (or synchronous), which an
  // asynchronous node's stream waits for (stream_actor.h).
  std::vector<std::vector<int>> cross_stream_inputs;
  // Per node: the actor its RunNode / InputReady messages go to (the op actor
  // of its chain, or its communicator's collective actor).
  std::vector<caf::actor> receiver;
  std::vector<caf::actor> op_actors;
  std::vector<caf::actor> collective_actors;  // per communicator
  std::vector<caf::actor> stream_actors;      // per TaskGraph::streams slot
  caf::actor coordinator;
  // Per communicator: its issue order (collective_actor.h). The collectives
  // of a communicator whose calls do not block are issued by whichever
  // actor makes one ready (the local shortcut of the RunNode to the
  // collective actor, as pending counts are of InputReady); those of a
  // blocking communicator only by its detached collective actor.
  std::vector<std::unique_ptr<CollectiveOrder>> collective_order;
  TraceRecorder* trace = nullptr;
  MessagePool pool;
  // ActorRunnerOptions::caller_runs: a ready node's actor stays with the
  // unit of the actor that readied it (SendRun).
  bool caller_runs = false;

  // ---- asynchronous streams (set before the actors run) ----
  StreamWaitStrategy stream_wait = StreamWaitStrategy::kEvent;
  // A test hook: the stream of `consumer` does not wait for `producer`
  // (removing one cross-stream wait must be detected, never pass silently).
  int skip_wait_producer = -1;
  int skip_wait_consumer = -1;

  // ---- per step ----
  std::unique_ptr<std::atomic<int>[]> pending;
  std::atomic<int> remaining{0};
  std::atomic<bool> failed{false};
  std::atomic<int64_t> epoch{0};      // the coordinator's step counter
  std::atomic<int64_t> user_step{0};  // the step number Run was given
  // Events of asynchronous work: completed[node] is the last epoch whose
  // work of that node finished (or was skipped); issued / done count the
  // work items of each stream.
  std::unique_ptr<std::atomic<int64_t>[]> completed;
  std::unique_ptr<std::atomic<int64_t>[]> stream_issued;
  std::unique_ptr<std::atomic<int64_t>[]> stream_done;
  // Per node, per cross-stream input: the producer stream's issued count
  // when the node was issued (the full-Wait strategy waits for it).
  std::vector<std::vector<int64_t>> wait_marks;
  // Per node on a device stream (StreamSlot::device): its event, recorded
  // after its work is queued; null elsewhere. Made with the runner.
  std::vector<std::unique_ptr<Event>> node_events;
  // Issuing is one step, as on a device stream: the marks, the count and
  // the enqueue. (Counted by one thread and enqueued by another, two items
  // reached a stream's mailbox out of count order, and a full Wait on that
  // stream waited for an item queued behind a waiter: a deadlock TSan's
  // timing showed, 1 run in 25 under load.)
  std::mutex issue_mu;
  // Happens-before between streams, as vector clocks (a race detector that
  // does not depend on timing): node_clock[node * S + s] is the clock of
  // node's stream after it ran node's work (S = the number of streams;
  // entry s of a clock counts the work items of stream s it is ordered
  // after). A consumer's stream joins the clocks of the producers it waited
  // for; a cross-stream input whose work is not covered by the consumer's
  // clock is a race. Guarded by event_mu.
  std::vector<int64_t> node_clock;
  std::mutex event_mu;
  std::condition_variable event_cv;

  bool tracing() const { return trace != nullptr && trace->enabled(); }

  // Sends node `to` its RunNode (`from` -1: the coordinator). From an actor,
  // the message carries the worker it runs on (scheduler_policy.h).
  // `here`: the sender returns next, so the receiver may wait in its
  // worker's next-job box (resume-here); otherwise it goes to the shared
  // queue at once.
  void SendRun(caf::local_actor* self, int from, int to, int64_t epoch_id,
               bool here);
  // Node `id` finished (or was skipped): each successor other than `skip`
  // counts one input ready; those brought to zero are sent their RunNode
  // (a collective of a non-blocking communicator is issued here, in its
  // turn: CollectiveReady). Returns whether one of them was sent to a
  // blocking communicator's collective actor.
  // `here`: as for SendRun (the sender's chain ends with `id`).
  bool Signal(caf::local_actor* self, int id, int64_t epoch_id, int skip,
              bool here);
  // `n` nodes finished; the last node of the step tells the coordinator.
  void Finish(caf::local_actor* self, int n, int64_t epoch_id, int last_node);
  // The step failed at `node`: later tasks are skipped, the coordinator is
  // told (its first error wins).
  void Fail(caf::local_actor* self, int64_t epoch_id, int node,
            const Status& s);
  // Runs node `id`'s task (unless the step failed) and fills `span` when
  // tracing; `flow` (non-zero) is the message that started it. Returns false
  // when the node failed or was skipped.
  bool RunTask(caf::local_actor* self, int id, int64_t epoch_id, uint64_t flow,
               TraceSpan* span);
  // Records `span` (filled by RunTask), ending now: after the node's
  // messages, so flow arrows start inside it.
  void EndSpan(TraceSpan* span);
  // Collective `id` (of epoch `epoch_id`; `flow` its RunNode) is ready:
  // marks it in its communicator's order and issues every collective whose
  // turn has come, unless another actor is doing so (it then issues these
  // too). `self` runs the calls.
  void CollectiveReady(caf::local_actor* self, int id, int64_t epoch_id,
                       uint64_t flow);
  // Issues collective `id`: runs it (or puts it on its stream) and tells its
  // consumers. Returns whether it ran here (the caller then counts it
  // towards the step's end: Finish).
  bool IssueCollective(caf::local_actor* self, int id, int64_t epoch_id,
                       uint64_t flow);
  // Issues node `id` of an asynchronous place on its stream actor.
  void IssueOnStream(caf::local_actor* self, int id, int64_t epoch_id);
  // Marks node `id`'s event complete for `epoch_id` and wakes the waiters.
  void CompleteEvent(int id, int stream, int64_t epoch_id);
  // Wakes every stream wait (an abort).
  void WakeWaiters();
};

}  // namespace parex
