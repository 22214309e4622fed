// ActorRunner: runs a TaskGraph on CAF 0.17 actors (DESIGN.md §3.4).
//
// One actor per node (or per chain of nodes on one place, see
// ActorRunnerOptions::fuse_chains), spawned once; a coordinator actor starts
// a step by sending one message to every node without predecessors. A finishing node
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
#include <functional>
#include <memory>

#include "actors/scheduler_policy.h"
#include "actors/task_graph.h"
#include "actors/trace_recorder.h"
#include "base/status.h"

namespace parex {

// A CAF actor system (its scheduler is the worker pool) that several
// runners can share, so an executor with several compiled steps keeps one
// pool of threads. Opaque outside actors/actor_runner.cc.
class ActorSystem {
 public:
  // `num_threads` workers (0: hardware concurrency) scheduled by `policy`
  // (scheduler_policy.h); `spin_us`: how long kResumeHere's idle workers
  // poll before they block (0 when there are more workers than cores).
  static std::shared_ptr<ActorSystem> Create(
      int num_threads, SchedulerPolicy policy = SchedulerPolicy::kResumeHere,
      int spin_us = 50);
  ~ActorSystem();
  struct Impl;
  Impl* impl() const { return impl_.get(); }

 private:
  explicit ActorSystem(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct ActorRunnerOptions {
  // Used when `system` is null: the runner makes a system of its own.
  int num_threads = 0;
  SchedulerPolicy scheduler = SchedulerPolicy::kResumeHere;
  // A shared system; it outlives the runner (the runner holds a reference).
  std::shared_ptr<ActorSystem> system;
  // Chains of nodes on one place, each ready the moment the one before
  // finishes (ChainNext, task_graph.h), run as one actor, in order: one
  // message per chain instead of per node. Every node still gets a span.
  bool fuse_chains = true;
  // When set and enabled: a span per task and a record per message.
  // Must outlive the runner.
  TraceRecorder* trace = nullptr;
};

// Work of a step outside its nodes, done by the coordinator actor: `begin`
// before the first node is sent its message (feeding, scope bookkeeping); a
// `begin` error fails the step and no node runs. `end` after the last node
// finished, or after `begin` failed (`ran` false); `ok` is false when the
// step failed; an `end` error fails the step too.
struct StepHooks {
  std::function<Status()> begin;
  std::function<Status(bool ran, bool ok)> end;
};

class ActorRunner : public TaskRunner {
 public:
  // REQUIRES: graph->Finalize() succeeded.
  static StatusOr<std::unique_ptr<ActorRunner>> Create(
      std::shared_ptr<const TaskGraph> graph, ActorRunnerOptions options = {});
  ~ActorRunner() override;

  Status Run(int64_t step) override { return Run(step, nullptr); }
  // `hooks` (may be null) must live until Run returns.
  Status Run(int64_t step, const StepHooks* hooks);

  // Op actors (one per chain): each gets one run message per step.
  int num_actors() const;

  struct Impl;  // the actors and the per-step state (actor_runner.cc)

 private:
  explicit ActorRunner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace parex
