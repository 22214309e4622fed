// Issue 12, acceptance 4: after warm-up, a training step allocates nothing
// on the heap: no kernel output, no op runner bookkeeping, no actor message
// (actors/runtime/message_pool.h), no scheduler queue node. This binary
// replaces the global operator new (and its variants) with a counting one; the
// count is read over 100 steady steps of the MLPs on 2 places.
//
// The steps feed the same per-place tensors (refilled in place, as a reader
// with its own buffers would) and fetch nothing: Run's fetched values are new
// tensors handed to the caller, by design.
//
// PAREX_ALLOC_BACKTRACE=1 prints the stack of each counted allocation.
#include <execinfo.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "actors/executor/parallel_executor.h"
#include "graph/builder/examples.h"
#include "kernels/example_feed.h"
#include "kernels/reference_executor.h"

namespace {

std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
thread_local bool in_hook = false;

void* Allocate(std::size_t size, std::size_t align) {
  if (counting.load(std::memory_order_relaxed) && !in_hook) {
    allocations.fetch_add(1, std::memory_order_relaxed);
    static const bool backtraces =
        std::getenv("PAREX_ALLOC_BACKTRACE") != nullptr;
    if (backtraces) {
      in_hook = true;
      void* frames[32];
      const int n = backtrace(frames, 32);
      const char line[] = "---- allocation\n";
      (void)!write(2, line, sizeof(line) - 1);
      backtrace_symbols_fd(frames, n, 2);
      in_hook = false;
    }
  }
  if (size == 0) size = 1;
  void* p = nullptr;
  if (align > alignof(std::max_align_t)) {
    if (posix_memalign(&p, align, size) != 0) p = nullptr;
  } else {
    p = std::malloc(size);
  }
  return p;
}

}  // namespace

void* operator new(std::size_t size) {
  void* p = Allocate(size, 0);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](std::size_t size) {
  void* p = Allocate(size, 0);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return Allocate(size, 0);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return Allocate(size, 0);
}
void* operator new(std::size_t size, std::align_val_t align) {
  void* p = Allocate(size, static_cast<std::size_t>(align));
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](std::size_t size, std::align_val_t align) {
  void* p = Allocate(size, static_cast<std::size_t>(align));
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

namespace parex {
namespace {

// Allocations made by `steps` steady steps of `kind` on 2 places, after
// `warmup` steps, built with `strategy`.
long SteadyStepAllocations(ExampleKind kind, int warmup, int steps,
                           const BuildStrategy& strategy = {}) {
  StatusOr<ExampleProgram> ex = BuildExample(kind);
  EXPECT_TRUE(ex.ok()) << ex.status().ToString();
  if (!ex.ok()) return -1;
  Scope scope;
  ReferenceExecutor startup;
  EXPECT_TRUE(startup.Run(ex->startup, &scope, {}, {}).ok());
  // The step that drops the execution scopes (every
  // num_iteration_per_drop_scope steps) frees and remakes the temporaries,
  // which is its point: not a steady step, so not inside the window.
  ExecutionStrategy exec;
  exec.num_iteration_per_drop_scope = warmup + steps + 10;
  auto pe = ParallelExecutor::Create({Place::CPU(0), Place::CPU(1)}, ex->main,
                                     ex->loss, &scope, strategy, exec);
  EXPECT_TRUE(pe.ok()) << pe.status().ToString();
  if (!pe.ok()) return -1;
  // One feed dict per place, its tensors refilled in place each step.
  const FeedMap whole = RandomExampleFeed(*ex, 32, 7);
  std::vector<FeedMap> feeds(2);
  for (const auto& [name, t] : whole) {
    feeds[0][name] = t.Slice(0, 16).Clone();
    feeds[1][name] = t.Slice(16, 32).Clone();
  }
  const std::vector<std::string> no_fetch;
  void* frames[4];
  (void)backtrace(frames, 4);  // loads the unwinder before counting
  for (int s = 0; s < warmup + steps; ++s) {
    if (s == warmup) counting = true;
    for (FeedMap& feed : feeds) {
      for (auto& [name, t] : feed) {
        if (t.dtype() == DType::kFP32) t.data<float>()[0] = 0.01f * s;
      }
    }
    auto r = (*pe)->RunPerPlace(feeds, no_fetch);
    if (!r.ok()) {
      counting = false;
      ADD_FAILURE() << r.status().ToString();
      return -1;
    }
  }
  counting = false;
  return allocations.exchange(0);
}

TEST(SteadyStepAllocationTest, TheDigitsMlpOnTwoPlacesAllocatesNothing) {
  EXPECT_EQ(SteadyStepAllocations(ExampleKind::kDigitsMlp, 20, 100), 0);
}

TEST(SteadyStepAllocationTest, TheFashionMlpOnTwoPlacesAllocatesNothing) {
  EXPECT_EQ(SteadyStepAllocations(ExampleKind::kFashionMlp, 20, 100), 0);
}

TEST(SteadyStepAllocationTest, TheFashionMlpInReduceModeWithSlicesToo) {
  // fc_0.w_0's Adam runs as a slice per place, on views refreshed each step.
  BuildStrategy strategy;
  strategy.reduce = BuildStrategy::ReduceStrategy::kReduce;
  EXPECT_EQ(SteadyStepAllocations(ExampleKind::kFashionMlp, 20, 100, strategy),
            0);
}

// The counter counts: a step that must allocate (fetching returns new
// tensors) is seen.
TEST(SteadyStepAllocationTest, TheCounterSeesAllocations) {
  counting = true;
  auto* p = new std::vector<int>(100);
  counting = false;
  delete p;
  EXPECT_GE(allocations.exchange(0), 2);
}

}  // namespace
}  // namespace parex
