// The peers parex's actor runtime is measured against (issue 5 (a),
// DESIGN.md §6): two TaskRunners over the same immutable TaskGraph.
//
//   ThreadPoolRunner    a plain thread pool: N workers, one shared FIFO
//                       ready queue (mutex + condition variable) and an
//                       atomic pending counter per node. A finishing node
//                       decrements its successors' counters; the one that
//                       brings a counter to zero owns that successor. It
//                       continues with the first successor it owns and
//                       queues the others (STYLE.md 5). An idle worker
//                       polls the queue for `spin_us` before it blocks, as
//                       tuned pools (and TBB) do: a step's next node
//                       usually comes within microseconds, and a futex
//                       wake-up costs several.
//   TbbFlowGraphRunner  oneTBB's flow graph: a continue_node per node, an
//                       edge per successor, in a task_arena of N threads
//                       (the thread calling Run is one of them).
//
// Both follow the TaskRunner contract: the first task error of a step
// wins, the tasks of that step not yet started are skipped (readiness
// still propagates, so the step ends) and Run returns the error; the next
// Run starts clean. Thread-safety: one Run at a time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "actors/runtime/task_graph.h"
#include "base/status.h"

namespace parex {
namespace bench {

// The first error of a step, shared by the tasks of that step.
class FirstError {
 public:
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  void Record(const Status& status);
  // Returns the recorded error (OK if none) and clears it.
  // REQUIRES: no task of the step is still running.
  Status Take();

 private:
  std::atomic<bool> failed_{false};
  std::mutex mu_;
  Status status_;  // guarded by mu_
};

class ThreadPoolRunner : public TaskRunner {
 public:
  // Starts `num_threads` workers (at least one); `spin_us` 0: idle workers
  // block at once (a plain mutex + condition variable pool).
  // REQUIRES: graph->Finalize() succeeded.
  ThreadPoolRunner(std::shared_ptr<const TaskGraph> graph, int num_threads,
                   int spin_us = kDefaultSpinUs);
  ~ThreadPoolRunner() override;

  ThreadPoolRunner(const ThreadPoolRunner&) = delete;
  ThreadPoolRunner& operator=(const ThreadPoolRunner&) = delete;

  Status Run(int64_t step) override;

  static constexpr int kDefaultSpinUs = 50;

 private:
  void WorkerLoop();
  // Polls `queued_` until it is positive or `spin_ns_` have passed.
  void SpinForWork() const;
  // Runs `node`, then every node it makes ready and keeps for itself.
  void RunChain(int node);

  const std::shared_ptr<const TaskGraph> graph_;
  const int64_t spin_ns_;
  std::vector<int> roots_;  // nodes without predecessors

  // Per-step state. Run writes it (pending counts relaxed, then the roots
  // under mu_), so every worker sees it through the queue or the counters.
  int64_t step_ = 0;
  std::unique_ptr<std::atomic<int>[]> pending_;  // per node
  std::atomic<int> remaining_{0};  // nodes of the step not yet finished
  FirstError error_;

  // The ready queue: a ring of size() slots, enough because a node is
  // queued at most once a step and the queue is empty between steps.
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::vector<int> ring_;  // guarded by mu_
  size_t head_ = 0;        // guarded by mu_: next to pop
  size_t tail_ = 0;        // guarded by mu_: next free slot
  // tail_ - head_, written under mu_ and read without it by spinners.
  std::atomic<int> queued_{0};
  int idle_workers_ = 0;  // guarded by mu_: blocked on work_cv_
  bool stop_ = false;     // guarded by mu_

  // The worker that finishes the step's last node wakes Run.
  std::mutex done_mu_;
  std::condition_variable done_cv_;
  bool done_ = false;  // guarded by done_mu_

  std::vector<std::thread> workers_;
};

class TbbFlowGraphRunner : public TaskRunner {
 public:
  // REQUIRES: graph->Finalize() succeeded; num_threads >= 1.
  TbbFlowGraphRunner(std::shared_ptr<const TaskGraph> graph, int num_threads);
  ~TbbFlowGraphRunner() override;

  TbbFlowGraphRunner(const TbbFlowGraphRunner&) = delete;
  TbbFlowGraphRunner& operator=(const TbbFlowGraphRunner&) = delete;

  Status Run(int64_t step) override;

 private:
  struct Impl;  // keeps oneTBB's headers out of this one
  std::unique_ptr<Impl> impl_;
};

}  // namespace bench
}  // namespace parex
