#include "base/cycle_clock.h"

namespace parex {
namespace {

// steady_clock and the counter read together: the counter's midpoint
// around the steady read, from the closest of a few tries (a thread
// preempted between the reads would skew the rate).
CycleClock::Point ReadTogether() {
  CycleClock::Point best;
  int64_t best_gap = -1;
  for (int i = 0; i < 5; ++i) {
    const int64_t before = CycleClock::Now();
    const std::chrono::steady_clock::time_point steady =
        std::chrono::steady_clock::now();
    const int64_t after = CycleClock::Now();
    if (best_gap < 0 || after - before < best_gap) {
      best_gap = after - before;
      best = {steady, before + (after - before) / 2};
    }
  }
  return best;
}

}  // namespace

const CycleClock::Point& CycleClock::Origin() {
  static const Point origin = ReadTogether();
  return origin;
}

double CycleClock::TicksPerSecond() {
#if defined(__x86_64__)
  // The counter's rate from Start() to now, measured over at least 10 ms.
  const Point& origin = Origin();
  while (std::chrono::steady_clock::now() - origin.steady <
         std::chrono::milliseconds(10)) {
  }
  const Point now = ReadTogether();
  return static_cast<double>(now.ticks - origin.ticks) /
         std::chrono::duration<double>(now.steady - origin.steady).count();
#else
  return 1e9;
#endif
}

}  // namespace parex
