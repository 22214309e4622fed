#include "actors/runtime/coordinator_actor.h"

#include <string>
#include <vector>

namespace parex {

CoordinatorActor::CoordinatorActor(caf::actor_config& config,
                                   RunnerState* state, StepControl* control)
    : caf::event_based_actor(config), state_(state), control_(control) {}

caf::behavior CoordinatorActor::make_behavior() {
  return {
      [this](const StepStart& m) {
        if (draining_) {
          deferred_ = true;
          deferred_step_ = m.step;
          return;
        }
        Start(m.step);
      },
      [this](const StepError& m) {
        if (m.step == epoch_ && running_ && error_.ok()) {
          error_ = Status(static_cast<StatusCode>(m.code), m.message);
        }
      },
      [this](const StepDone& m) {
        if (m.step != epoch_) return;
        if (draining_) {
          draining_ = false;
          if (deferred_) {
            deferred_ = false;
            Start(deferred_step_);
          }
          return;
        }
        if (running_) EndStep(true);
      },
      [this](const AbortStep& m) { Abort(m); },
  };
}

void CoordinatorActor::Start(int64_t user_step) {
  RunnerState& rt = *state_;
  const TaskGraph& g = *rt.graph;
  if (resume_) {
    resume_ = false;
    if (g.resume) g.resume();
  }
  ++epoch_;
  rt.epoch.store(epoch_, std::memory_order_relaxed);
  rt.user_step.store(user_step, std::memory_order_relaxed);
  for (int i = 0; i < g.size(); ++i) {
    rt.pending[i].store(g.nodes[i].num_predecessors, std::memory_order_relaxed);
  }
  rt.remaining.store(g.size(), std::memory_order_relaxed);
  rt.failed.store(false, std::memory_order_relaxed);
  error_ = Status::Ok();
  running_ = true;
  const StepHooks* hooks = control_->hooks;
  if (hooks != nullptr && hooks->begin) {
    Status s = hooks->begin();
    if (!s.ok()) {
      error_ = std::move(s);
      EndStep(false);
      return;
    }
  }
  if (rt.roots.empty()) {
    EndStep(true);
    return;
  }
  for (int r : rt.roots) rt.SendRun(this, -1, r, epoch_, true);
}

void CoordinatorActor::Abort(const AbortStep& m) {
  RunnerState& rt = *state_;
  if (!running_ ||
      (m.step >= 0 && m.step != rt.user_step.load(std::memory_order_relaxed))) {
    return;  // no step to abort, or another one
  }
  if (error_.ok()) {
    error_ = Status(
        static_cast<StatusCode>(m.code),
        "step " + std::to_string(rt.user_step.load(std::memory_order_relaxed)) +
            " aborted: " + m.reason);
  }
  rt.failed.store(true, std::memory_order_release);
  const TaskGraph& g = *rt.graph;
  if (g.interrupt) g.interrupt(error_);
  rt.WakeWaiters();
  AbortStep told{epoch_, m.code, m.reason};
  std::vector<const std::vector<caf::actor>*> kinds = {
      &rt.op_actors, &rt.collective_actors, &rt.stream_actors};
  for (const std::vector<caf::actor>* actors : kinds) {
    for (const caf::actor& a : *actors) send(a, told);
  }
  draining_ = true;
  resume_ = true;
  EndStep(true);
}

void CoordinatorActor::EndStep(bool ran) {
  running_ = false;
  const StepHooks* hooks = control_->hooks;
  if (hooks != nullptr && hooks->end) {
    Status s = hooks->end(ran, error_.ok());
    if (!s.ok() && error_.ok()) error_ = std::move(s);
  }
  bool waiting = false;
  {
    std::lock_guard<std::mutex> lock(control_->mu);
    control_->result = error_;
    control_->done = true;
    control_->finished.store(true, std::memory_order_release);
    waiting = control_->waiting;
  }
  if (waiting) control_->cv.notify_one();
}

}  // namespace parex
