#include "actors/runtime/scheduler_policy.h"

#include <atomic>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/logger.hpp>
#include <caf/policy/unprofiled.hpp>
#include <caf/resumable.hpp>
#include <caf/scheduler/coordinator.hpp>
#include <caf/scheduler/worker.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "actors/runtime/job_ring.h"
#include "base/spin_lock.h"

namespace parex {
namespace {

using Clock = std::chrono::steady_clock;

// The kResumeHere policy (scheduler_policy.h). CAF's coordinator<P> and
// worker<P> call these members; their names and signatures are CAF's.
class ResumeHere : public caf::policy::unprofiled {
 public:
  struct coordinator_data {
    explicit coordinator_data(caf::scheduler::abstract_coordinator*) {}
    // The queue's lock is held for a push or a pop (base/spin_lock.h);
    // sleeping has its own mutex and condition variable. A producer
    // publishes `queued` and then reads `sleepers`; a worker going to sleep
    // counts itself in `sleepers` and then reads `queued` (both sequentially
    // consistent), so one of the two sees the other: no wake-up is lost.
    SpinLock lock;
    JobRing queue;               // guarded by lock
    std::atomic<int> queued{0};  // queue.size()
    std::mutex sleep_mu;
    std::condition_variable cv;
    std::atomic<int> sleepers{0};
    int64_t spin_ns = 50'000;  // set by the module factory
  };

  struct worker_data {
    explicit worker_data(caf::scheduler::abstract_coordinator*) {}
    // CAF copies one initial value into every worker: each box starts empty.
    worker_data(const worker_data&) {}
    // The job this worker runs next. Only its worker fills it; any worker
    // may empty it.
    std::atomic<caf::resumable*> next{nullptr};
  };

  template <class Coordinator>
  void enqueue(Coordinator* self, caf::resumable* job) {
    coordinator_data& c = d(self);
    {
      std::lock_guard<SpinLock> guard(c.lock);
      c.queue.push_back(job);
      c.queued.store(static_cast<int>(c.queue.size()),
                     std::memory_order_seq_cst);
    }
    if (c.sleepers.load(std::memory_order_seq_cst) > 0) {
      // Taking the sleepers' mutex orders this notify after a sleeper's
      // check of `queued` (it holds the mutex from there to its wait).
      { std::lock_guard<std::mutex> sleeping(c.sleep_mu); }
      c.cv.notify_one();
    }
  }

  template <class Coordinator>
  void central_enqueue(Coordinator* self, caf::resumable* job) {
    enqueue(self, job);
  }

  template <class Worker>
  void external_enqueue(Worker* self, caf::resumable* job) {
    enqueue(self->parent(), job);
  }

  template <class Worker>
  void internal_enqueue(Worker* self, caf::resumable* job) {
    std::atomic<caf::resumable*>& box = d(self).next;
    if (box.load(std::memory_order_relaxed) == nullptr) {
      box.store(job, std::memory_order_release);
      return;
    }
    enqueue(self->parent(), job);
  }

  template <class Worker>
  void resume_job_later(Worker* self, caf::resumable* job) {
    enqueue(self->parent(), job);
  }

  template <class Worker>
  caf::resumable* dequeue(Worker* self) {
    std::atomic<caf::resumable*>& box = d(self).next;
    if (box.load(std::memory_order_relaxed) != nullptr) {
      if (caf::resumable* job =
              box.exchange(nullptr, std::memory_order_acquire)) {
        return job;
      }
    }
    coordinator_data& c = d(self->parent());
    const Clock::time_point start = Clock::now();
    const Clock::time_point give_up =
        start + std::chrono::nanoseconds(c.spin_ns);
    // Another worker's box is only taken after this grace period: its
    // owner usually gets to it within a few hundred nanoseconds.
    const Clock::time_point steal_after = start + std::chrono::microseconds(5);
    bool may_steal = false;
    for (int polls = 1;; ++polls) {
      if (c.queued.load(std::memory_order_acquire) > 0) {
        if (caf::resumable* job = TryPop(c)) return job;
      }
      if (may_steal) {
        if (caf::resumable* job = StealBox(self)) return job;
      }
      CpuRelax();
      if (polls % 32 == 0) {
        const Clock::time_point now = Clock::now();
        if (now >= give_up) break;
        may_steal = now >= steal_after;
      }
    }
    for (;;) {
      if (caf::resumable* job = TryPop(c)) return job;
      std::unique_lock<std::mutex> sleeping(c.sleep_mu);
      c.sleepers.fetch_add(1, std::memory_order_seq_cst);
      while (c.queued.load(std::memory_order_seq_cst) == 0) c.cv.wait(sleeping);
      c.sleepers.fetch_sub(1, std::memory_order_seq_cst);
    }
  }

  template <class Worker, class UnaryFunction>
  void foreach_resumable(Worker* self, UnaryFunction f) {
    if (caf::resumable* job = d(self).next.exchange(nullptr)) f(job);
  }

  template <class Coordinator, class UnaryFunction>
  void foreach_central_resumable(Coordinator* self, UnaryFunction f) {
    coordinator_data& c = d(self);
    std::lock_guard<SpinLock> guard(c.lock);
    while (!c.queue.empty()) f(PopLocked(c));
  }

 private:
  static caf::resumable* PopLocked(coordinator_data& c) {
    caf::resumable* job = c.queue.front();
    c.queue.pop_front();
    c.queued.store(static_cast<int>(c.queue.size()), std::memory_order_release);
    return job;
  }

  static caf::resumable* TryPop(coordinator_data& c) {
    std::lock_guard<SpinLock> guard(c.lock);
    return c.queue.empty() ? nullptr : PopLocked(c);
  }

  template <class Worker>
  static caf::resumable* StealBox(Worker* self) {
    auto* parent = self->parent();
    for (size_t i = 0; i < parent->num_workers(); ++i) {
      if (i == self->id()) continue;
      std::atomic<caf::resumable*>& box = parent->worker_by_id(i)->data().next;
      if (box.load(std::memory_order_relaxed) == nullptr) continue;
      if (caf::resumable* job =
              box.exchange(nullptr, std::memory_order_acquire)) {
        return job;
      }
    }
    return nullptr;
  }
};

}  // namespace
}  // namespace parex

namespace caf {
namespace scheduler {

// The worker loop of the kResumeHere policy: CAF's (worker.hpp) without its
// bookkeeping for the logger. CAF's loop records each job's actor id for the
// logger (CAF_PUSH_AID_FROM_PTR), and scheduled_actor::resume records it
// again, whether or not CAF logs anything:
//   - the loop's record needs dynamic_cast<abstract_actor*>(job), a
//     cross-cast CAF evaluates even without a logger: ~40 ns, a fifth of a
//     message's cost on one worker (perf: __do_dyncast and strcmp);
//   - each record takes a reader lock on one lock word all workers share:
//     cache-line transfers between cores on every message.
// Built without logging (CAF_LOG_LEVEL_QUIET, as Debian's CAF is), the ids
// are never read: the loop drops its record, and the worker leaves the
// logger, so resume's record (which tests current_logger()) is skipped too.
// An explicit specialization of CAF's member for this policy only; the
// other policies keep CAF's loop.
template <>
void worker<::parex::ResumeHere>::run() {
#if CAF_LOG_LEVEL == CAF_LOG_LEVEL_QUIET
  logger::set_current_actor_system(nullptr);
#endif
  for (;;) {
    resumable* job = policy_.dequeue(this);
    policy_.before_resume(this, job);
    const resumable::resume_result result = job->resume(this, max_throughput_);
    policy_.after_resume(this, job);
    switch (result) {
      case resumable::resume_later:
        // Still runnable: it keeps its reference.
        policy_.resume_job_later(this, job);
        break;
      case resumable::done:
        policy_.after_completion(this, job);
        intrusive_ptr_release(job);
        break;
      case resumable::awaiting_message:
        // Made runnable again by its next message.
        intrusive_ptr_release(job);
        break;
      case resumable::shutdown_execution_unit:
        policy_.after_completion(this, job);
        policy_.before_shutdown(this);
        return;
    }
  }
}

}  // namespace scheduler
}  // namespace caf

namespace parex {

const char* SchedulerPolicyName(SchedulerPolicy policy) {
  switch (policy) {
    case SchedulerPolicy::kResumeHere:
      return "resume-here";
    case SchedulerPolicy::kSharing:
      return "sharing";
    case SchedulerPolicy::kStealing:
      return "stealing";
  }
  return "?";
}

void UseSchedulerPolicy(caf::actor_system_config& config,
                        SchedulerPolicy policy, int spin_us) {
  switch (policy) {
    case SchedulerPolicy::kSharing:
      config.set("scheduler.policy", caf::atom("sharing"));
      return;
    case SchedulerPolicy::kStealing:
      config.set("scheduler.policy", caf::atom("stealing"));
      return;
    case SchedulerPolicy::kResumeHere:
      break;
  }
  const int64_t spin_ns = int64_t{spin_us < 0 ? 0 : spin_us} * 1000;
  // actor_system's constructor keeps a scheduler module a factory made
  // instead of building one from "scheduler.policy".
  config.module_factories.push_back(
      [spin_ns](caf::actor_system& sys) -> caf::actor_system::module* {
        auto* coordinator = new caf::scheduler::coordinator<ResumeHere>(sys);
        coordinator->data().spin_ns = spin_ns;
        return coordinator;
      });
}

}  // namespace parex
