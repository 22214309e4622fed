// The ParallelExecutor on CUDA places (skipped where no GPU is visible; run
// by scripts/device_check on a lent GPU machine): the example MLP and CNN
// train on cuda:0 and on two places sharing it (cuda:0x2: the in-device
// communicator) with the losses of the same run on CPU places within 1e-4
// relative, under both stream wait strategies, fetches and
// SyncPersistables come back to the host, a steady step asks the CUDA
// allocator for no new device memory, and steps replayed as a CUDA graph
// equal the steps run on the actors bit for bit, with feeds in pinned host
// memory (the executor's feed allocator) as with any other. With two GPUs, one
// place on each (the NCCL communicator) trains as two CPU places do.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "actors/comm/nccl_communicator.h"
#include "actors/executor/parallel_executor.h"
#include "graph/builder/examples.h"
#include "kernels/allocator.h"
#include "kernels/cuda/cuda_info.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/example_feed.h"
#include "kernels/reference_executor.h"

namespace parex {
namespace {

constexpr int kSteps = 6;

class CudaPlacesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
    RegisterCudaKernels(&KernelRegistry::Global());
    RegisterNcclCommunicator();
  }
};

struct Losses {
  std::vector<std::vector<float>> steps;
  size_t steady_system_allocs = 0;  // device allocations in steps 3..
};

Losses Train(const ExampleProgram& ex, const std::vector<Place>& places,
             StreamWaitStrategy wait, bool graphs = true,
             bool pinned_feeds = false) {
  Losses out;
  Scope scope;
  ReferenceExecutor startup;
  auto init = startup.Run(ex.startup, &scope, {}, {});
  EXPECT_TRUE(init.ok()) << init.status().ToString();
  ExecutionStrategy exec;
  exec.stream_wait = wait;
  exec.cuda_graphs = graphs;
  auto pe =
      ParallelExecutor::Create(places, ex.main, ex.loss, &scope, {}, exec);
  EXPECT_TRUE(pe.ok()) << pe.status().ToString();
  if (!pe.ok()) return out;
  auto system_allocs = [&] {
    size_t n = 0;
    for (const Place& p : places) {
      if (p.is_cuda()) n += GetAllocator(p)->stats().num_system_allocs;
    }
    return n;
  };
  size_t before = 0;
  for (int step = 0; step < kSteps; ++step) {
    if (step == 2) before = system_allocs();
    FeedMap feed = RandomExampleFeed(ex, 16, 100 + step);
    if (pinned_feeds) {
      EXPECT_NE((*pe)->feed_allocator(), nullptr);
      StatusOr<FeedMap> pinned = CopyFeed(feed, (*pe)->feed_allocator());
      EXPECT_TRUE(pinned.ok()) << pinned.status().ToString();
      if (pinned.ok()) feed = std::move(*pinned);
    }
    auto r = (*pe)->Run(feed, {ex.loss});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return out;
    const Tensor& t = (*r)[0];
    EXPECT_TRUE(t.place().is_cpu());
    out.steps.emplace_back(t.data<float>(), t.data<float>() + t.numel());
  }
  out.steady_system_allocs = system_allocs() - before;
  Status synced = (*pe)->SyncPersistables();
  EXPECT_TRUE(synced.ok()) << synced.ToString();
  return out;
}

double RelDiff(double a, double b) {
  return std::abs(a - b) / std::max({std::abs(a), std::abs(b), 1e-6});
}

TEST_F(CudaPlacesTest, ExamplesTrainAsOnCpuPlacesWithoutSteadyAllocations) {
  for (ExampleKind kind :
       {ExampleKind::kFashionMlp, ExampleKind::kFashionCnn}) {
    StatusOr<ExampleProgram> ex = BuildExample(kind);
    ASSERT_TRUE(ex.ok()) << ex.status().ToString();
    const std::vector<std::vector<Place>> layouts = {
        {Place::CUDA(0)}, {Place::CUDA(0), Place::CUDA(0, 1)}};
    for (const std::vector<Place>& places : layouts) {
      std::vector<Place> cpus;
      for (size_t p = 0; p < places.size(); ++p) cpus.push_back(Place::CPU(p));
      const Losses cpu = Train(*ex, cpus, StreamWaitStrategy::kEvent);
      ASSERT_EQ(cpu.steps.size(), static_cast<size_t>(kSteps));
      for (StreamWaitStrategy wait :
           {StreamWaitStrategy::kEvent, StreamWaitStrategy::kWait}) {
        SCOPED_TRACE(std::string(ExampleName(kind)) + " on " +
                     std::to_string(places.size()) + " cuda places, " +
                     (wait == StreamWaitStrategy::kEvent ? "event" : "wait"));
        const Losses gpu = Train(*ex, places, wait);
        ASSERT_EQ(gpu.steps.size(), cpu.steps.size());
        for (size_t s = 0; s < gpu.steps.size(); ++s) {
          ASSERT_EQ(gpu.steps[s].size(), cpu.steps[s].size());
          for (size_t p = 0; p < gpu.steps[s].size(); ++p) {
            EXPECT_LT(RelDiff(gpu.steps[s][p], cpu.steps[s][p]), 1e-4)
                << "step " << s << " place " << p << ": " << gpu.steps[s][p]
                << " vs " << cpu.steps[s][p];
          }
        }
        EXPECT_EQ(gpu.steady_system_allocs, 0u);
      }
      // Steps 3.. replayed as one CUDA graph compute what the steps on the
      // actors compute, bit for bit.
      const Losses eager =
          Train(*ex, places, StreamWaitStrategy::kEvent, /*graphs=*/false);
      const Losses graphed =
          Train(*ex, places, StreamWaitStrategy::kEvent, /*graphs=*/true);
      EXPECT_EQ(graphed.steps, eager.steps)
          << ExampleName(kind) << " on " << places.size() << " places";
      // And the steps on the actors run to run (every GEMM's algorithm
      // fixed by its shape: each stream has its own cuBLAS workspace).
      const Losses again =
          Train(*ex, places, StreamWaitStrategy::kEvent, /*graphs=*/false);
      EXPECT_EQ(again.steps, eager.steps)
          << ExampleName(kind) << " on " << places.size()
          << " places, steps on the actors twice";
      // Feeds in pinned host memory are copied from where they are (into
      // the buffers the graph reads): the same bits, no steady allocation.
      const Losses pinned = Train(*ex, places, StreamWaitStrategy::kEvent,
                                  /*graphs=*/true, /*pinned_feeds=*/true);
      EXPECT_EQ(pinned.steps, eager.steps)
          << ExampleName(kind) << " on " << places.size()
          << " places, pinned feeds";
      EXPECT_EQ(pinned.steady_system_allocs, 0u);
    }
  }
}

TEST_F(CudaPlacesTest, OnePlacePerGpuTrainsThroughNcclAsOnCpuPlaces) {
  if (CudaDeviceCount() < 2) {
    GTEST_SKIP() << "one CUDA device visible: NCCL needs a GPU per rank";
  }
  StatusOr<ExampleProgram> ex = BuildExample(ExampleKind::kFashionMlp);
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  const Losses cpu =
      Train(*ex, {Place::CPU(0), Place::CPU(1)}, StreamWaitStrategy::kEvent);
  for (StreamWaitStrategy wait :
       {StreamWaitStrategy::kEvent, StreamWaitStrategy::kWait}) {
    const Losses gpu = Train(*ex, {Place::CUDA(0), Place::CUDA(1)}, wait);
    ASSERT_EQ(gpu.steps.size(), cpu.steps.size());
    for (size_t s = 0; s < gpu.steps.size(); ++s) {
      ASSERT_EQ(gpu.steps[s].size(), 2u);
      for (size_t p = 0; p < 2; ++p) {
        EXPECT_LT(RelDiff(gpu.steps[s][p], cpu.steps[s][p]), 1e-4)
            << "step " << s << " place " << p;
      }
    }
    EXPECT_EQ(gpu.steady_system_allocs, 0u);
  }
}

}  // namespace
}  // namespace parex
