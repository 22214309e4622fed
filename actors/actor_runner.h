// ActorRunner: runs a TaskGraph on CAF 0.17 actors (DESIGN.md §3.4).
//
// One op actor per node, spawned once; a coordinator actor starts a step by
// sending one message to every node without predecessors. A finishing node
// decrements each successor's pending counter (per-step state copied from
// the graph's initial counts) and the producer that brings a counter to zero
// sends that successor its single "run" message. The node that finishes last
// tells the coordinator, which answers Run. The first task error of a step
// wins: later tasks of that step are skipped (readiness still propagates, so
// the step ends promptly and nothing hangs) and Run returns the error; the
// next Run starts clean.
//
// Thread-safety: one Run at a time. CAF's scheduler (`num_threads` workers)
// is the thread pool tasks run on.
#pragma once

#include <cstdint>
#include <memory>

#include "actors/task_graph.h"
#include "actors/trace_recorder.h"
#include "base/status.h"

namespace parex {

struct ActorRunnerOptions {
  int num_threads = 0;  // CAF scheduler workers; 0: hardware concurrency
  // CAF's `sharing` scheduler policy (one shared queue) instead of
  // `stealing`, whose idle workers poll and sleep in 50 µs steps.
  bool sharing_policy = true;
  // When set and enabled: a span per task and a record per message.
  // Must outlive the runner.
  TraceRecorder* trace = nullptr;
};

class ActorRunner : public TaskRunner {
 public:
  // REQUIRES: graph->Finalize() succeeded.
  static StatusOr<std::unique_ptr<ActorRunner>> Create(
      std::shared_ptr<const TaskGraph> graph, ActorRunnerOptions options = {});
  ~ActorRunner() override;

  Status Run(int64_t step) override;

  struct Impl;  // the actors and the per-step state (actor_runner.cc)

 private:
  explicit ActorRunner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace parex
