// ActorRunner: runs a TaskGraph on CAF 0.17 actors (DESIGN.md §3.4). It
// builds the actors of the plan and wires them; each kind is a named type in
// its own file:
//   - OpActor (op_actor.h): one per chain of nodes on one place (or per node,
//     without ActorRunnerOptions::fuse_chains);
//   - CollectiveActor (collective_actor.h): one per communicator of the graph
//     (TaskGraph::communicators), issuing its collectives in the plan's fixed
//     order; detached when the backend's calls block;
//   - StreamActor (stream_actor.h): one per asynchronous stream
//     (TaskGraph::streams), detached;
//   - CoordinatorActor (coordinator_actor.h): starts steps, counts pending
//     nodes, first error wins, abort, answers Run.
// Their messages are actors/runtime/messages.h; the shared per-step counts that
// stand for most of them inside a process are RunnerState (runner_state.h).
//
// Thread-safety: one Run at a time; Abort from any thread. CAF's scheduler
// (`num_threads` workers) is the thread pool the op actors run on.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "actors/runtime/scheduler_policy.h"
#include "actors/runtime/step_hooks.h"
#include "actors/runtime/task_graph.h"
#include "actors/runtime/trace_recorder.h"
#include "actors/runtime/worker_pool.h"
#include "base/status.h"

namespace parex {

struct RunnerState;

struct ActorRunnerOptions {
  // Used when `system` is null: the runner makes a system of its own.
  int num_threads = 0;
  SchedulerPolicy scheduler = SchedulerPolicy::kResumeHere;
  // A shared system; it outlives the runner (the runner holds a reference).
  std::shared_ptr<WorkerPool> system;
  // Chains of nodes on one place, each ready the moment the one before
  // finishes (ChainNext, task_graph.h), run as one actor, in order: one
  // message per chain instead of per node. Every node still gets a span.
  bool fuse_chains = true;
  // How long Run's caller polls for the step's end before it sleeps (0:
  // sleeps at once). Where a core would otherwise idle, a short step
  // (inference at batch 1) then ends without waking a thread; where the
  // workers and their intra-op threads fill the cores, polling would take
  // one from them.
  int caller_poll_us = 0;
  // Run's caller runs the step itself: an actor that a message from the
  // caller, or from an actor the caller runs, makes runnable is resumed on
  // the calling thread, as a worker would resume it, until none is left;
  // what another thread makes runnable (a blocking collective's chain, a
  // stream's completion) goes to the workers as before. For a system of one
  // worker, which would otherwise run the step while the caller sleeps: no
  // thread wakes at the step's start or end (inference at batch 1).
  bool caller_runs = false;
  // When set and enabled: a span per task and a record per message.
  // Must outlive the runner.
  TraceRecorder* trace = nullptr;
  StreamWaitStrategy stream_wait = StreamWaitStrategy::kEvent;
  // A test hook: the stream of node `skip_wait_consumer` does not wait for
  // node `skip_wait_producer` (a removed cross-stream wait must be caught).
  int skip_wait_producer = -1;
  int skip_wait_consumer = -1;
};

class ActorRunner : public TaskRunner {
 public:
  // REQUIRES: graph->Finalize() succeeded. Errors: a graph without a root, a
  // synchronous node reading an asynchronous node's output.
  static StatusOr<std::unique_ptr<ActorRunner>> Create(
      std::shared_ptr<const TaskGraph> graph, ActorRunnerOptions options = {});
  ~ActorRunner() override;

  Status Run(int64_t step) override { return Run(step, nullptr); }
  // `hooks` (may be null) must live until Run returns.
  Status Run(int64_t step, const StepHooks* hooks);

  // Aborts the step that is running, if any (a peer is gone, a deadline
  // passed): Run returns `reason` (prefixed "step N aborted: ") promptly,
  // and the next Run starts clean. Callable from any thread.
  void Abort(const Status& reason);

  // Switches the stream wait strategy; takes effect at the next step.
  // REQUIRES: no step running.
  void set_stream_wait(StreamWaitStrategy strategy);

  // Op actors (one per chain): each gets one run message per step.
  int num_actors() const;
  int num_collective_actors() const;
  int num_stream_actors() const;

  // The shared state of the actors (tests drive actors by messages).
  RunnerState* state() const;

  struct Impl;

 private:
  explicit ActorRunner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace parex
