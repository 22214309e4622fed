// StepHooks and StepControl: the work of a step outside its nodes, and the
// caller's side of Run (coordinator_actor.h). Free of CAF.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>

#include "base/status.h"

namespace parex {

// Work of a step outside its nodes, done by the coordinator actor: `begin`
// before the first node is sent its message (feeding, scope bookkeeping); a
// `begin` error fails the step and no node runs. `end` after the last node
// finished, after an abort (`ok` false), or after `begin` failed (`ran`
// false); an `end` error fails the step too.
struct StepHooks {
  std::function<Status()> begin;
  std::function<Status(bool ran, bool ok)> end;
};

// Where the coordinator answers Run: the caller waits on `cv` until `done`.
// (A condition variable, not a CAF response to a scoped actor: waking a
// thread this way costs the caller about a third of a request/receive.)
struct StepControl {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;     // guarded by mu
  bool waiting = false;  // guarded by mu: the caller sleeps on cv
  Status result;         // guarded by mu
  // `done`, readable without mu: the caller polls it a while before it
  // sleeps, so that a short step's end wakes no thread.
  std::atomic<bool> finished{false};
  // Set by Run before the StepStart message, read by the coordinator.
  const StepHooks* hooks = nullptr;
};

}  // namespace parex
