// CycleClock: a clock for timing very short intervals many times over (the
// cluster's account of time inside microsecond collectives), where a
// steady_clock read (~20 ns through the vDSO here) is a measurable part of
// what is timed. On x86-64 it reads the time-stamp counter (~9 ns), whose
// rate it measures against steady_clock over the process's life so far
// (the kernel runs steady_clock on that counter where the counter is
// invariant); elsewhere it is steady_clock in nanoseconds.
//
// Ticks are for differences and sums; Seconds() turns them into time.
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace parex {

class CycleClock {
 public:
  static int64_t Now() {
#if defined(__x86_64__)
    return static_cast<int64_t>(__rdtsc());
#else
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
#endif
  }

  // Starts measuring the counter's rate (its first call does; later ones do
  // nothing): call it when timing begins, so that Seconds() has measured
  // over the run so far.
  static void Start() { (void)Origin(); }

  // `ticks` (a difference or sum of Now()s) in seconds.
  static double Seconds(int64_t ticks) {
    return static_cast<double>(ticks) / TicksPerSecond();
  }
  // The counter's rate (reads both clocks: convert several sums with one).
  static double TicksPerSecond();

  struct Point {
    std::chrono::steady_clock::time_point steady;
    int64_t ticks = 0;
  };

 private:
  static const Point& Origin();
};

}  // namespace parex
