// JobRing: a FIFO of CAF jobs (resumables) for the runtime's schedulers:
// the kResumeHere policy's shared queue (scheduler_policy.cc) and the
// caller's own queue when the step's caller runs it (actor_runner.cc).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace caf {
class resumable;
}  // namespace caf

namespace parex {

// A FIFO of jobs in a ring buffer that only grows: unlike std::deque, which
// allocates and frees a block every few hundred pushes, it allocates nothing
// once it has held the most jobs a run queues at once (a steady step
// allocates nothing, issue 12).
class JobRing {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  void push_back(caf::resumable* job) {
    if (size_ == slots_.size()) Grow();
    slots_[(head_ + size_) % slots_.size()] = job;
    ++size_;
  }
  caf::resumable* front() const { return slots_[head_]; }
  void pop_front() {
    head_ = (head_ + 1) % slots_.size();
    --size_;
  }

 private:
  void Grow() {
    std::vector<caf::resumable*> bigger(
        std::max<size_t>(64, 2 * slots_.size()));
    for (size_t i = 0; i < size_; ++i) {
      bigger[i] = slots_[(head_ + i) % slots_.size()];
    }
    slots_.swap(bigger);
    head_ = 0;
  }

  std::vector<caf::resumable*> slots_;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace parex
