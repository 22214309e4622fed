#include "base/cycle_clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace parex {
namespace {

using Steady = std::chrono::steady_clock;

// An interval timed by CycleClock and by steady_clock around the same
// reads: they agree to within 2% (and a few microseconds).
double Agreement(std::chrono::milliseconds sleep) {
  const Steady::time_point s0 = Steady::now();
  const int64_t t0 = CycleClock::Now();
  std::this_thread::sleep_for(sleep);
  const int64_t t1 = CycleClock::Now();
  const Steady::time_point s1 = Steady::now();
  const double steady = std::chrono::duration<double>(s1 - s0).count();
  return CycleClock::Seconds(t1 - t0) / steady;
}

TEST(CycleClockTest, TicksAreSecondsAsSteadyClockCountsThem) {
  CycleClock::Start();
  // The first conversion measures the rate over at least 10 ms.
  EXPECT_NEAR(Agreement(std::chrono::milliseconds(5)), 1.0, 0.02);
  EXPECT_NEAR(Agreement(std::chrono::milliseconds(30)), 1.0, 0.02);
  // Sums of differences are time too.
  int64_t sum = 0;
  const Steady::time_point s0 = Steady::now();
  for (int i = 0; i < 3; ++i) {
    const int64_t t0 = CycleClock::Now();
    std::this_thread::sleep_for(std::chrono::milliseconds(4));
    sum += CycleClock::Now() - t0;
  }
  const double steady =
      std::chrono::duration<double>(Steady::now() - s0).count();
  EXPECT_GT(CycleClock::Seconds(sum), 0.012 * 0.98);
  EXPECT_LE(CycleClock::Seconds(sum), steady * 1.02);
}

TEST(CycleClockTest, NowGoesForward) {
  const int64_t a = CycleClock::Now();
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_GT(CycleClock::Now(), a);
}

}  // namespace
}  // namespace parex
