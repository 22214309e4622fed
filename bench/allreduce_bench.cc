// In-process all-reduce throughput against memcpy, measured in one run
// (issue 5, benchmark (c); DESIGN.md §6). Printed, never asserted.
//
// For 2, 3 and 4 CPU places and 1 KiB ... 64 MiB of fp32 per place:
//   all-reduce  InProcessCommunicator::AllReduce (Prepare included), its
//               64 KiB chunks spread over 2 threads (the calling thread and
//               one helper);
//   memcpy      the peer: every place's bytes copied to another buffer, cut
//               into the same 64 KiB chunks on the same 2 threads. It moves
//               what an in-place all-reduce must move at least (read and
//               write each place's bytes once), so all-reduce / memcpy is
//               the fraction of copy bandwidth the reduction reaches. (The
//               copy writes to another buffer, whose lines it must fetch
//               before writing; the in-place all-reduce writes lines it just
//               read, so it can beat the peer on sizes beyond the caches.)
// algbw = bytes per place / time; busbw = algbw * 2(n-1)/n (nccl-tests).
// Each time is the best of 11 batches of >= 10 ms (or one call), the two
// sides' batches alternating.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "actors/comm/in_process_communicator.h"

namespace parex {
namespace {

// A parallel_for over the calling thread and one helper that spins (with
// yields) between calls; chunk indices come from one counter. A call returns
// only after the helper checked in for it, so a late helper never touches
// the counter of the next call.
class TwoThreadPool {
 public:
  TwoThreadPool() : helper_([this] { HelperLoop(); }) {}
  ~TwoThreadPool() {
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    helper_.join();
  }

  void ParallelFor(int n, const std::function<void(int)>& body) {
    body_ = &body;
    n_ = n;
    next_.store(0, std::memory_order_relaxed);
    const uint64_t g = generation_.fetch_add(1, std::memory_order_acq_rel) + 1;
    Work();
    while (checked_in_.load(std::memory_order_acquire) != g) {
      std::this_thread::yield();
    }
  }

 private:
  void Work() {
    for (int i = next_.fetch_add(1, std::memory_order_relaxed); i < n_;
         i = next_.fetch_add(1, std::memory_order_relaxed)) {
      (*body_)(i);
    }
  }

  void HelperLoop() {
    uint64_t seen = 0;
    for (;;) {
      uint64_t g;
      int spins = 0;
      while ((g = generation_.load(std::memory_order_acquire)) == seen) {
        if (++spins > 64) std::this_thread::yield();
      }
      seen = g;
      if (stop_.load(std::memory_order_acquire)) return;
      Work();
      checked_in_.store(g, std::memory_order_release);
    }
  }

  const std::function<void(int)>* body_ = nullptr;
  int n_ = 0;
  std::atomic<int> next_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> checked_in_{0};
  std::atomic<bool> stop_{false};
  std::thread helper_;
};

using Clock = std::chrono::steady_clock;

// Batch size for fn: calls that take >= 10 ms together (at least one).
int CallsPerBatch(const std::function<void()>& fn) {
  fn();  // warm-up: first touch, caches
  int calls = 1;
  for (;;) {
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) fn();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s >= 0.01 || calls >= (1 << 20)) return calls;
    calls *= 2;
  }
}

// Best seconds per call of a and of b over 11 batches each, alternating
// a and b so that both see the same machine (it is shared).
std::pair<double, double> BestSeconds(const std::function<void()>& a,
                                      const std::function<void()>& b) {
  const int calls_a = CallsPerBatch(a);
  const int calls_b = CallsPerBatch(b);
  double best_a = 1e30, best_b = 1e30;
  auto batch = [](const std::function<void()>& fn, int calls) {
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) fn();
    return std::chrono::duration<double>(Clock::now() - t0).count() / calls;
  };
  for (int round = 0; round < 11; ++round) {
    best_a = std::min(best_a, batch(a, calls_a));
    best_b = std::min(best_b, batch(b, calls_b));
  }
  return {best_a, best_b};
}

std::string SizeName(int64_t bytes) {
  char buf[32];
  if (bytes >= (1 << 20)) {
    std::snprintf(buf, sizeof(buf), "%lld MiB",
                  static_cast<long long>(bytes >> 20));
  } else {
    std::snprintf(buf, sizeof(buf), "%lld KiB",
                  static_cast<long long>(bytes >> 10));
  }
  return buf;
}

int Main() {
  TwoThreadPool pool;
  InProcessCommunicatorOptions options;  // default 64 KiB chunks
  options.parallel_for = [&pool](int n, const std::function<void(int)>& body) {
    pool.ParallelFor(n, body);
  };
  const int64_t chunk_bytes = options.chunk_bytes;

  std::printf(
      "in-process all-reduce (fp32, sum, in place) vs memcpy; 2 threads, "
      "%lld KiB chunks\n",
      static_cast<long long>(chunk_bytes >> 10));
  std::printf("%6s %9s %12s %12s %12s %12s %12s %7s\n", "places", "size",
              "allreduce_us", "algbw_GB/s", "busbw_GB/s", "memcpy_us",
              "memcpy_GB/s", "ratio");
  for (int places = 2; places <= 4; ++places) {
    InProcessCommunicator comm(places, options);
    for (int64_t bytes = 1 << 10; bytes <= (int64_t{64} << 20); bytes *= 4) {
      const int64_t numel = bytes / 4;
      std::vector<std::unique_ptr<Tensor>> grads, dst;
      PlaceTensors ptrs;
      for (int p = 0; p < places; ++p) {
        // Zeros: the sums stay finite and normal whatever the iteration
        // count (fp add speed does not depend on the values otherwise).
        grads.push_back(
            std::make_unique<Tensor>(DType::kFP32, Dims{numel}, Place::CPU(p)));
        dst.push_back(
            std::make_unique<Tensor>(DType::kFP32, Dims{numel}, Place::CPU(p)));
        std::memset(grads.back()->raw_data(), 0, bytes);
        std::memset(dst.back()->raw_data(), 0, bytes);
        ptrs.push_back(grads.back().get());
      }
      const std::function<void()> all_reduce = [&] {
        if (!comm.AllReduce("grad", ptrs).ok()) std::abort();
      };

      // The peer: the same chunks of every place, copied.
      const int chunks_per_place =
          static_cast<int>((bytes + chunk_bytes - 1) / chunk_bytes);
      const std::function<void(int)> copy_chunk = [&](int i) {
        const int p = i / chunks_per_place;
        const int64_t begin = (i % chunks_per_place) * chunk_bytes;
        const int64_t len = std::min(chunk_bytes, bytes - begin);
        std::memcpy(static_cast<char*>(dst[p]->raw_data()) + begin,
                    static_cast<const char*>(grads[p]->raw_data()) + begin,
                    len);
      };
      const int copy_chunks = chunks_per_place * places;
      // Like the all-reduce, which runs a single chunk on the calling
      // thread, the peer skips the pool when each place is one chunk.
      const std::function<void()> copy = [&] {
        if (chunks_per_place == 1) {
          for (int i = 0; i < copy_chunks; ++i) copy_chunk(i);
        } else {
          pool.ParallelFor(copy_chunks, copy_chunk);
        }
      };
      const auto [t_reduce, t_copy] = BestSeconds(all_reduce, copy);

      const double algbw = bytes / t_reduce / 1e9;
      const double busbw = algbw * 2.0 * (places - 1) / places;
      const double copybw = bytes / t_copy / 1e9;
      std::printf("%6d %9s %12.2f %12.2f %12.2f %12.2f %12.2f %7.2f\n", places,
                  SizeName(bytes).c_str(), t_reduce * 1e6, algbw, busbw,
                  t_copy * 1e6, copybw, algbw / copybw);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace parex

int main() { return parex::Main(); }
