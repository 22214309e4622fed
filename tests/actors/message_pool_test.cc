#include "actors/runtime/message_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace parex {
namespace {

// Elements disposed of by another thread (the receiver's) go to that
// thread's shard; the sender, whose shard is then empty, must take them
// back from there rather than make new ones.
TEST(MessagePoolTest, ReusesElementsReleasedByAnotherThread) {
  constexpr size_t kReserved = 100;
  FreeList<RunNode> list;
  list.Reserve(kReserved);
  std::vector<PooledElement<RunNode>*> held;
  std::set<PooledElement<RunNode>*> first;
  for (size_t i = 0; i < kReserved; ++i) {
    held.push_back(list.Acquire());
    first.insert(held.back());
  }
  EXPECT_EQ(first.size(), kReserved);
  std::thread([&] {
    for (PooledElement<RunNode>* e : held) list.Release(e);
  }).join();
  std::set<PooledElement<RunNode>*> second;
  for (size_t i = 0; i < kReserved; ++i) second.insert(list.Acquire());
  EXPECT_EQ(second, first);
  EXPECT_EQ(list.made(), kReserved);
  for (PooledElement<RunNode>* e : second) list.Release(e);
}

// Threads acquire and release batches, each thread's batch released by the
// next thread: an element is never handed to two holders at once, and no
// more are made than can be held at once.
TEST(MessagePoolTest, NeverHandsOneElementToTwoHolders) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 2000;
  constexpr int kBatch = 8;
  FreeList<RunNode> list;
  std::mutex mu;
  std::set<PooledElement<RunNode>*> in_use;  // guarded by mu
  int duplicates = 0;                        // guarded by mu
  size_t peak = 0;                           // guarded by mu
  // mailbox[t]: the batches thread t - 1 made, which thread t releases.
  std::vector<std::vector<PooledElement<RunNode>*>> mailbox(kThreads);
  std::vector<std::mutex> mailbox_mu(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        std::vector<PooledElement<RunNode>*> batch;
        for (int i = 0; i < kBatch; ++i) {
          PooledElement<RunNode>* e = list.Acquire();
          e->value().node = t;
          std::lock_guard<std::mutex> lock(mu);
          if (!in_use.insert(e).second) ++duplicates;
          peak = std::max(peak, in_use.size());
          batch.push_back(e);
        }
        std::vector<PooledElement<RunNode>*> mine;
        {
          std::lock_guard<std::mutex> lock(mailbox_mu[t]);
          mine.swap(mailbox[t]);
        }
        for (PooledElement<RunNode>* e : mine) {
          {
            std::lock_guard<std::mutex> lock(mu);
            in_use.erase(e);
          }
          list.Release(e);
        }
        const int next = (t + 1) % kThreads;
        std::lock_guard<std::mutex> lock(mailbox_mu[next]);
        mailbox[next].insert(mailbox[next].end(), batch.begin(), batch.end());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(duplicates, 0);
  for (int t = 0; t < kThreads; ++t) {
    for (PooledElement<RunNode>* e : mailbox[t]) list.Release(e);
  }
  // Elements are made only when none is free (give or take the ones
  // released while a thread looked): bounded by the most held at once, where
  // a leak would grow with kRounds (64,000 acquisitions).
  EXPECT_LE(list.made(), 2 * peak + size_t{kThreads} * kBatch);
}

}  // namespace
}  // namespace parex
