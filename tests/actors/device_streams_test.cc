// The device path of the ParallelExecutor (actors/executor/device_places.h)
// run on CPU places (ExecutionStrategy::device_streams): stream actors drive
// device contexts, persistables live in every place's own copies, feeds go in
// and fetches come out as copies, collectives go through the in-device
// communicator. Every step's losses and, after SyncPersistables, every
// persistable equal the host path's bit for bit: the MLP and the CNN, in
// all-reduce, fused all-reduce and Reduce mode (sliced optimizers included),
// on 1, 2 and 3 places, with the event and the full-Wait strategy. On a GPU
// the same path drives CUDA streams (scripts/device_check runs it there).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "actors/executor/parallel_executor.h"
#include "graph/builder/examples.h"
#include "kernels/allocator.h"
#include "kernels/example_feed.h"
#include "kernels/reference_executor.h"

namespace parex {
namespace {

using ::testing::HasSubstr;

struct TrainRun {
  std::vector<std::vector<float>> losses;  // per step
  std::map<std::string, std::vector<char>> persistables;
};

struct Mode {
  std::string name;
  BuildStrategy build;
};

std::vector<Mode> Modes() {
  std::vector<Mode> modes(4);
  modes[0].name = "allreduce";
  modes[1].name = "fused";
  modes[1].build.fuse_all_reduce_ops = true;
  modes[2].name = "reduce";
  modes[2].build.reduce = BuildStrategy::ReduceStrategy::kReduce;
  modes[3].name = "reduce_sliced_memopt";
  modes[3].build.reduce = BuildStrategy::ReduceStrategy::kReduce;
  modes[3].build.slice_optimizer_min_numel = 64;
  modes[3].build.memory_optimize = true;
  return modes;
}

// `pool_feeds`: the feeds made by the executor's feed_allocator.
TrainRun Train(const ExampleProgram& ex, int places, const BuildStrategy& build,
               bool device, StreamWaitStrategy wait, bool pool_feeds = false) {
  TrainRun run;
  Scope scope;
  ReferenceExecutor startup;
  auto init = startup.Run(ex.startup, &scope, {}, {});
  EXPECT_TRUE(init.ok()) << init.status().ToString();
  std::vector<Place> list;
  for (int p = 0; p < places; ++p) list.push_back(Place::CPU(p));
  ExecutionStrategy exec;
  exec.num_threads = 2;
  exec.device_streams = device;
  exec.stream_wait = wait;
  auto pe =
      ParallelExecutor::Create(list, ex.main, ex.loss, &scope, build, exec);
  EXPECT_TRUE(pe.ok()) << pe.status().ToString();
  if (!pe.ok()) return run;
  Allocator* pool = (*pe)->feed_allocator();
  // Device places' feeds have a home of their own, apart from the CPU's.
  EXPECT_EQ(pool != nullptr, device);
  EXPECT_NE(pool, GetAllocator(Place::CPU()));
  for (uint32_t step = 0; step < 3; ++step) {
    FeedMap feed = RandomExampleFeed(ex, 12, 40 + step);
    if (pool_feeds) {
      StatusOr<FeedMap> copied = CopyFeed(feed, pool);
      EXPECT_TRUE(copied.ok()) << copied.status().ToString();
      if (copied.ok()) feed = std::move(*copied);
    }
    auto out = (*pe)->Run(feed, {ex.loss});
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    if (!out.ok()) return run;
    const Tensor& t = (*out)[0];
    run.losses.emplace_back(t.data<float>(), t.data<float>() + t.numel());
  }
  Status synced = (*pe)->SyncPersistables();
  EXPECT_TRUE(synced.ok()) << synced.ToString();
  for (const auto& var : ex.main.global_block().vars()) {
    if (!var->persistable() || !var->is_tensor()) continue;
    const Variable* v = scope.FindVar(var->name());
    if (v == nullptr || v->GetTensor() == nullptr) continue;
    const Tensor& t = *v->GetTensor();
    if (!t.defined()) continue;
    EXPECT_TRUE(t.place().is_cpu()) << var->name();
    const char* bytes = static_cast<const char*>(t.raw_data());
    run.persistables[var->name()].assign(bytes, bytes + t.bytes());
  }
  return run;
}

TEST(DeviceStreamsTest, TrainLikeTheHostPathBitForBit) {
  for (ExampleKind kind :
       {ExampleKind::kFashionMlp, ExampleKind::kFashionCnn}) {
    StatusOr<ExampleProgram> ex = BuildExample(kind);
    ASSERT_TRUE(ex.ok()) << ex.status().ToString();
    for (const Mode& mode : Modes()) {
      for (int places : {1, 2, 3}) {
        SCOPED_TRACE(std::string(ExampleName(kind)) + " " + mode.name + " " +
                     std::to_string(places) + " places");
        const TrainRun host =
            Train(*ex, places, mode.build, false, StreamWaitStrategy::kEvent);
        ASSERT_EQ(host.losses.size(), 3u);
        ASSERT_FALSE(host.persistables.empty());
        // Feeds through staging buffers, and copied directly from the
        // executor's feed allocator (with events: the event strategy).
        for (const auto& [wait, pool_feeds] :
             {std::pair{StreamWaitStrategy::kEvent, false},
              std::pair{StreamWaitStrategy::kWait, false},
              std::pair{StreamWaitStrategy::kEvent, true}}) {
          SCOPED_TRACE(pool_feeds ? "feeds from the feed allocator"
                                  : "feeds through staging");
          const TrainRun device =
              Train(*ex, places, mode.build, true, wait, pool_feeds);
          EXPECT_EQ(device.losses, host.losses);
          EXPECT_EQ(device.persistables.size(), host.persistables.size());
          for (const auto& [name, bytes] : host.persistables) {
            auto it = device.persistables.find(name);
            ASSERT_NE(it, device.persistables.end()) << name;
            EXPECT_TRUE(it->second == bytes) << name << " differs";
          }
        }
      }
    }
  }
}

// SetOnPlaces reaches every place's own copy: a learning rate of 0 set
// between steps stops the training of every place.
TEST(DeviceStreamsTest, SetOnPlacesWritesEveryPlacesCopy) {
  StatusOr<ExampleProgram> ex = BuildExample(ExampleKind::kFashionMlp);
  ASSERT_TRUE(ex.ok());
  Scope scope;
  ReferenceExecutor startup;
  ASSERT_TRUE(startup.Run(ex->startup, &scope, {}, {}).ok());
  std::string lr;
  for (const auto& var : ex->main.global_block().vars()) {
    if (var->persistable() && var->name().find("learning_rate") == 0)
      lr = var->name();
  }
  ASSERT_FALSE(lr.empty());
  ExecutionStrategy exec;
  exec.device_streams = true;
  auto pe = ParallelExecutor::Create({Place::CPU(0), Place::CPU(1)}, ex->main,
                                     ex->loss, &scope, {}, exec);
  ASSERT_TRUE(pe.ok()) << pe.status().ToString();
  Tensor zero(DType::kFP32, {1});
  zero.data<float>()[0] = 0;
  ASSERT_TRUE((*pe)->SetOnPlaces(lr, zero).ok());
  const FeedMap feed = RandomExampleFeed(*ex, 8, 5);
  auto first = (*pe)->Run(feed, {ex->loss});
  auto second = (*pe)->Run(feed, {ex->loss});
  ASSERT_TRUE(first.ok() && second.ok());
  for (int p = 0; p < 2; ++p) {
    EXPECT_EQ((*first)[0].data<float>()[p], (*second)[0].data<float>()[p])
        << "place " << p << " trained with a zero learning rate";
  }
  Tensor wrong(DType::kFP64, {1});
  Status s = (*pe)->SetOnPlaces(lr, wrong);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr(lr));
}

}  // namespace
}  // namespace parex

namespace parex {
namespace {

// The device path keeps the race detector: without its wait, the optimizer
// of place 1 reading the all-reduced gradient is reported (within a bounded
// number of runs: stream order may cover a removed wait, test
// parallel_runtime_shape_test explains), and a covered run computes what
// the run with every wait does.
TEST(DeviceStreamsTest, ARemovedWaitIsReportedAsARace) {
  StatusOr<ExampleProgram> ex = BuildExample(ExampleKind::kDigitsMlp);
  ASSERT_TRUE(ex.ok());
  Scope probe_scope;
  ReferenceExecutor startup;
  ASSERT_TRUE(startup.Run(ex->startup, &probe_scope, {}, {}).ok());
  ExecutionStrategy exec;
  exec.device_streams = true;
  auto probe =
      ParallelExecutor::Create({Place::CPU(0), Place::CPU(1)}, ex->main,
                               ex->loss, &probe_scope, {}, exec);
  ASSERT_TRUE(probe.ok()) << probe.status().ToString();
  const SsaGraph& g = (*probe)->graph();
  ASSERT_FALSE(g.grads.empty());
  const SsaOp& c = g.op(g.grads.front().collective);
  int consumer = -1;
  for (int v : c.outputs) {
    for (int r : g.var(v).readers) {
      if (g.op(r).kind == SsaOpKind::kComputation && g.op(r).place == 1)
        consumer = r;
    }
  }
  ASSERT_GE(consumer, 0);
  auto run = [&](int skip_producer, int skip_consumer) {
    Scope scope;
    ReferenceExecutor init;
    EXPECT_TRUE(init.Run(ex->startup, &scope, {}, {}).ok());
    ExecutionStrategy e = exec;
    e.skip_wait_producer = skip_producer;
    e.skip_wait_consumer = skip_consumer;
    auto pe = ParallelExecutor::Create({Place::CPU(0), Place::CPU(1)}, ex->main,
                                       ex->loss, &scope, {}, e);
    EXPECT_TRUE(pe.ok());
    std::vector<float> losses;
    for (uint32_t step = 0; step < 2; ++step) {
      auto out = (*pe)->Run(RandomExampleFeed(*ex, 8, step), {ex->loss});
      if (!out.ok()) return StatusOr<std::vector<float>>(out.status());
      losses.push_back((*out)[0].data<float>()[1]);
    }
    return StatusOr<std::vector<float>>(losses);
  };
  const auto kept = run(-1, -1);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  bool reported = false;
  for (int attempt = 0; attempt < 12 && !reported; ++attempt) {
    const auto removed = run(c.id, consumer);
    if (removed.ok()) {
      EXPECT_EQ(*removed, *kept);
      continue;
    }
    reported = true;
    EXPECT_THAT(removed.status().message(), HasSubstr("race on stream"));
    EXPECT_THAT(removed.status().message(), HasSubstr(g.OpLabel(c.id)));
  }
  EXPECT_TRUE(reported);
}

}  // namespace
}  // namespace parex
