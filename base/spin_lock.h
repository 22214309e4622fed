// SpinLock: a mutex for critical sections of a few nanoseconds that two or
// more threads enter back to back (the runtime's message free lists and its
// scheduler's job queue: every message passes through both).
//
// std::mutex (glibc) parks a contended waiter in the kernel at once: a futex
// wait and a futex wake, microseconds, for a section that takes nanoseconds.
// Measured on the layered DAG of bench/runtime_bench (2 workers), the free
// lists' std::mutex made a message cost 1.4 µs, this lock 0.36 µs. A waiter
// here polls (with the CPU's pause hint), and yields its time slice after
// kSpinsBeforeYield polls, so a holder that lost its CPU gets it back
// instead of being starved by spinners on an oversubscribed machine.
//
// Satisfies Lockable (std::lock_guard, std::unique_lock). Written by hand:
// the standard library has no spinning mutex, and TBB's spin_mutex would
// make TBB (a benchmark peer here) a dependency of the runtime.
//
// Thread-safety: all members may be called from any thread; not recursive.
#pragma once

#include <atomic>
#include <thread>

namespace parex {

// The CPU's hint that the caller is polling (x86 pause, Arm yield): a
// polling loop calls it between reads.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

class SpinLock {
 public:
  SpinLock() = default;
  SpinLock(const SpinLock&) = delete;
  SpinLock& operator=(const SpinLock&) = delete;

  void lock() {
    for (int spins = 0;;) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      // Wait reading only, so the waiters do not take the line from the
      // holder with writes.
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < kSpinsBeforeYield) {
          CpuRelax();
        } else {
          spins = 0;
          std::this_thread::yield();
        }
      }
    }
  }

  bool try_lock() {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }

  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  static constexpr int kSpinsBeforeYield = 256;

  std::atomic<bool> locked_{false};
};

}  // namespace parex
