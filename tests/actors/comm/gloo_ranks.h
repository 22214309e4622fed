// Gloo ranks as threads of one process (tests of the Gloo-backed
// communicators).
#pragma once

#include <gloo/rendezvous/hash_store.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "actors/comm/gloo_communicator.h"

namespace parex {

// Runs body(rank, comm) on `size` threads joined by one rendezvous. No
// rank closes its connections before every rank's body returned (a rank
// that closes while a peer still reads its last message resets it, as
// Cluster::Leave avoids between processes).
inline void WithRanks(
    int size, const std::function<void(int, GlooCommunicator&)>& body,
    std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  auto store = std::make_shared<gloo::rendezvous::HashStore>();
  std::mutex mu;
  std::condition_variable cv;
  int finished = 0;
  std::vector<std::string> names;
  for (int r = 0; r < size; ++r)
    names.push_back("node '" + std::to_string(r) + "'");
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      StatusOr<std::shared_ptr<GlooCommunicator>> comm =
          GlooCommunicator::Connect(store, r, size, "127.0.0.1", timeout,
                                    names);
      ASSERT_TRUE(comm.ok()) << comm.status().ToString();
      body(r, **comm);
      std::unique_lock<std::mutex> lock(mu);
      ++finished;
      cv.notify_all();
      cv.wait_for(lock, std::chrono::seconds(60),
                  [&] { return finished == size; });
    });
  }
  for (std::thread& t : threads) t.join();
}

// Integer-valued floats: every order of summation gives the same bits, so
// the expected sum is exact.
}  // namespace parex
