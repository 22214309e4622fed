// ActorSystem: a CAF actor system (its scheduler is the worker pool) that
// several runners share, so an executor with several compiled steps keeps one
// pool of threads. Every system parex makes registers the runtime's message
// types (actors/messages.h) with CAF, so they serialise. Opaque outside
// actors/ (the CAF types live in Impl, actor_system.cc).
#pragma once

#include <memory>

#include "actors/scheduler_policy.h"

namespace caf {
class actor_system;
class actor_system_config;
}  // namespace caf

namespace parex {

class ActorSystem {
 public:
  // `num_threads` workers (0: hardware concurrency) scheduled by `policy`
  // (scheduler_policy.h); `spin_us`: how long kResumeHere's idle workers
  // poll before they block (0 when there are more workers than cores).
  static std::shared_ptr<ActorSystem> Create(
      int num_threads, SchedulerPolicy policy = SchedulerPolicy::kResumeHere,
      int spin_us = 50);
  ~ActorSystem();

  caf::actor_system& system() const { return *system_; }
  int num_threads() const { return num_threads_; }

 private:
  ActorSystem() = default;
  // The config outlives the system.
  std::unique_ptr<caf::actor_system_config> config_;
  std::unique_ptr<caf::actor_system> system_;
  int num_threads_ = 0;
};

}  // namespace parex
