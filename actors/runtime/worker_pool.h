// WorkerPool: the executor's CAF actor system. Its scheduler's threads are
// the worker pool on which the step runtime's actors (op, collective, stream,
// coordinator) run; several runners of one executor share it, so an executor
// with several compiled steps keeps one pool of threads. Every pool registers
// the runtime's message types (actors/runtime/messages.h) with CAF, so they
// serialise.
//
// A cluster process has a second CAF actor system, the node's
// (actors/cluster/cluster.cc): it owns the middleman (the network), the node
// actor and the watcher. The two are kept apart because they are tuned for
// opposite jobs: this one for microsecond steps (a scheduler policy of its
// own, no I/O), the node's for the network
// (heartbeats, TLS, blocking connects that must never stall a step's worker).
// Opaque outside actors/ (the CAF types live in worker_pool.cc).
#pragma once

#include <memory>

#include "actors/runtime/scheduler_policy.h"

namespace caf {
class actor_system;
class actor_system_config;
}  // namespace caf

namespace parex {

class WorkerPool {
 public:
  // `num_threads` workers (0: hardware concurrency) scheduled by `policy`
  // (scheduler_policy.h); `spin_us`: how long kResumeHere's idle workers
  // poll before they block (0 when there are more workers than cores).
  static std::shared_ptr<WorkerPool> Create(
      int num_threads, SchedulerPolicy policy = SchedulerPolicy::kResumeHere,
      int spin_us = 50);
  ~WorkerPool();

  caf::actor_system& system() const { return *system_; }
  int num_threads() const { return num_threads_; }

 private:
  WorkerPool() = default;
  // The config outlives the system.
  std::unique_ptr<caf::actor_system_config> config_;
  std::unique_ptr<caf::actor_system> system_;
  int num_threads_ = 0;
};

}  // namespace parex
