// Scheduler policies for CAF 0.17's worker pool (DESIGN.md §3.4).
//
// `kResumeHere` (parex's default) is CAF's `sharing` policy (one shared
// queue) with two changes that CAF 0.17 has no option for, installed
// through actor_system_config::module_factories:
//   - an actor made runnable by a message sent from a worker (an op actor
//     telling its successor it is ready) goes into that worker's one-slot
//     "next" box and runs on it as soon as the sender returns, warm in cache
//     and without a trip through the shared queue's lock; a second one made
//     runnable in the same turn goes to the shared queue, where an idle
//     worker takes it. An idle worker also takes a job from another
//     worker's box, so a busy worker never hoards one.
//   - an idle worker polls for `spin_us` before it blocks on the queue's
//     condition variable, so a message that arrives soon after costs no
//     futex wake-up; producers only notify when a worker sleeps.
//   - its workers run CAF's job loop without the logger's per-job
//     bookkeeping (a cross-cast and a shared reader lock per message; see
//     the loop in scheduler_policy.cc), when CAF is built without logging.
// Written here because no library offers it: it is glue to CAF's policy
// interface (scheduler/coordinator.hpp, worker.hpp).
#pragma once

namespace caf {
class actor_system_config;
}  // namespace caf

namespace parex {

enum class SchedulerPolicy {
  kResumeHere,  // see above
  kSharing,     // CAF's work_sharing: one locked queue, blocking workers
  kStealing,    // CAF's work_stealing: per-worker queues, polling workers
};

const char* SchedulerPolicyName(SchedulerPolicy policy);

// Makes a system built from `config` use `policy`; `spin_us` is the idle
// poll of kResumeHere (ignored by the others, which CAF configures).
void UseSchedulerPolicy(caf::actor_system_config& config,
                        SchedulerPolicy policy, int spin_us = 50);

}  // namespace parex
