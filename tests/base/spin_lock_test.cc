#include "base/spin_lock.h"

#include <gtest/gtest.h>

#include <mutex>
#include <thread>
#include <vector>

namespace parex {
namespace {

// More threads than cores: holders lose their CPU while others wait, which
// the yield after kSpinsBeforeYield must survive.
TEST(SpinLockTest, CountsEveryIncrementOfManyThreads) {
  constexpr int kThreads = 8;
  constexpr int kIncrements = 20000;
  SpinLock lock;
  int64_t counter = 0;  // guarded by lock, deliberately not atomic
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIncrements; ++i) {
        std::lock_guard<SpinLock> guard(lock);
        counter = counter + 1;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counter, int64_t{kThreads} * kIncrements);
}

TEST(SpinLockTest, TryLockFailsWhileHeld) {
  SpinLock lock;
  ASSERT_TRUE(lock.try_lock());
  bool other = true;
  std::thread([&] { other = lock.try_lock(); }).join();
  EXPECT_FALSE(other);
  lock.unlock();
  std::thread([&] { other = lock.try_lock(); }).join();
  EXPECT_TRUE(other);
  lock.unlock();
}

}  // namespace
}  // namespace parex
