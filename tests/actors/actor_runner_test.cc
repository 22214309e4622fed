// ActorRunner: every node runs once per step, after all its predecessors;
// the first task error fails the step and the next step starts clean.
#include "actors/actor_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <random>
#include <vector>

namespace parex {
namespace {

using ::testing::HasSubstr;

// A random DAG: node i's successors are drawn from the nodes after it.
std::shared_ptr<TaskGraph> RandomDag(int n, int max_fanout, uint32_t seed) {
  auto g = std::make_shared<TaskGraph>();
  g->nodes.resize(n);
  std::mt19937 rng(seed);
  for (int i = 0; i < n; ++i) {
    g->nodes[i].label = "node " + std::to_string(i);
    std::vector<int> succ;
    for (int k = 0; k < max_fanout && i + 1 < n; ++k) {
      const int s = i + 1 + static_cast<int>(rng() % (n - i - 1));
      if (std::find(succ.begin(), succ.end(), s) == succ.end()) succ.push_back(s);
    }
    g->nodes[i].successors = succ;
  }
  return g;
}

// How often each node ran.
struct Recorder {
  explicit Recorder(int n) : runs(n) {}
  std::vector<std::atomic<int>> runs;
};

void ExpectOrdered(const TaskGraph& g, const Recorder& r, int steps) {
  for (int i = 0; i < g.size(); ++i) {
    EXPECT_EQ(r.runs[i].load(), steps) << g.nodes[i].label;
  }
}

TEST(ActorRunnerTest, RunsEveryNodeOnceAfterItsPredecessors) {
  for (int threads : {1, 2, 4}) {
    for (int variant = 0; variant < 3; ++variant) {
      // 0: stealing policy; 1: sharing; 2: sharing with nodes on places,
      // whose linear chains run fused, and sparse fan-out so chains exist.
      const bool sharing = variant > 0;
      std::shared_ptr<TaskGraph> g =
          RandomDag(300, variant == 2 ? 1 : 3, 7 + threads);
      if (variant == 2) {
        for (int i = 0; i < g->size(); ++i) g->nodes[i].place = (i / 50) % 2;
      }
      auto rec = std::make_shared<Recorder>(g->size());
      std::atomic<int> order_violations{0};
      const TaskGraph* graph = g.get();
      // A node checks that each predecessor finished in this step before it.
      std::vector<std::vector<int>> preds(g->size());
      for (int i = 0; i < g->size(); ++i) {
        for (int s : g->nodes[i].successors) preds[s].push_back(i);
      }
      g->task = [rec, &preds, &order_violations](int node, int64_t step) {
        for (int p : preds[node]) {
          if (rec->runs[p].load() != step + 1) ++order_violations;
        }
        rec->runs[node].fetch_add(1);
        return Status::Ok();
      };
      ASSERT_TRUE(g->Finalize().ok());
      ActorRunnerOptions options;
      options.num_threads = threads;
      options.sharing_policy = sharing;
      options.fuse_chains = variant == 2;
      StatusOr<std::unique_ptr<ActorRunner>> runner =
          ActorRunner::Create(g, options);
      ASSERT_TRUE(runner.ok()) << runner.status().ToString();
      const int steps = 50;
      for (int step = 0; step < steps; ++step) {
        Status s = (*runner)->Run(step);
        ASSERT_TRUE(s.ok()) << s.ToString();
      }
      ExpectOrdered(*graph, *rec, steps);
      EXPECT_EQ(order_violations.load(), 0)
          << threads << " threads, variant " << variant;
    }
  }
}

TEST(ActorRunnerTest, FirstErrorFailsTheStepAndTheNextStepRuns) {
  std::shared_ptr<TaskGraph> g = RandomDag(200, 2, 3);
  auto runs = std::make_shared<std::vector<std::atomic<int>>>(g->size());
  std::atomic<int64_t> fail_step{-1};
  g->task = [runs, &fail_step](int node, int64_t step) -> Status {
    if (step == fail_step.load() && (node == 40 || node == 41)) {
      return Internal("task " + std::to_string(node) + " failed on purpose");
    }
    (*runs)[node].fetch_add(1);
    return Status::Ok();
  };
  ASSERT_TRUE(g->Finalize().ok());
  auto runner = ActorRunner::Create(g, {2, true});
  ASSERT_TRUE(runner.ok());
  ASSERT_TRUE((*runner)->Run(0).ok());
  fail_step = 1;
  Status s = (*runner)->Run(1);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("failed on purpose"));
  // Nodes after the failure were skipped: some ran only once so far.
  int skipped = 0;
  for (int i = 0; i < g->size(); ++i) skipped += (*runs)[i].load() < 2;
  EXPECT_GE(skipped, 1);
  Status next = (*runner)->Run(2);
  EXPECT_TRUE(next.ok()) << next.ToString();
}

TEST(ActorRunnerTest, EmptyAndSingleNodeGraphs) {
  auto empty = std::make_shared<TaskGraph>();
  empty->task = [](int, int64_t) { return Status::Ok(); };
  ASSERT_TRUE(empty->Finalize().ok());
  auto r0 = ActorRunner::Create(empty, {1, true});
  ASSERT_TRUE(r0.ok());
  EXPECT_TRUE((*r0)->Run(0).ok());

  auto one = std::make_shared<TaskGraph>();
  one->nodes.resize(1);
  std::atomic<int> count{0};
  one->task = [&count](int, int64_t) {
    ++count;
    return Status::Ok();
  };
  ASSERT_TRUE(one->Finalize().ok());
  auto r1 = ActorRunner::Create(one, {2, false});
  ASSERT_TRUE(r1.ok());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE((*r1)->Run(i).ok());
  EXPECT_EQ(count.load(), 100);
}

TEST(ActorRunnerTest, RunnersShareOneSystemAndStopIndependently) {
  std::shared_ptr<ActorSystem> system = ActorSystem::Create(2);
  auto count = std::make_shared<std::atomic<int>>(0);
  auto make = [&](uint32_t seed) {
    std::shared_ptr<TaskGraph> g = RandomDag(50, 2, seed);
    g->task = [count](int, int64_t) {
      ++*count;
      return Status::Ok();
    };
    EXPECT_TRUE(g->Finalize().ok());
    ActorRunnerOptions options;
    options.system = system;
    auto runner = ActorRunner::Create(g, options);
    EXPECT_TRUE(runner.ok());
    return std::move(runner).value();
  };
  std::unique_ptr<ActorRunner> a = make(1);
  std::unique_ptr<ActorRunner> b = make(2);
  for (int step = 0; step < 10; ++step) {
    ASSERT_TRUE(a->Run(step).ok());
    ASSERT_TRUE(b->Run(step).ok());
  }
  a.reset();  // b keeps running on the shared system
  for (int step = 10; step < 20; ++step) ASSERT_TRUE(b->Run(step).ok());
  EXPECT_EQ(count->load(), 50 * 10 * 2 + 50 * 10);
}

TEST(TaskGraphTest, FinalizeRejectsCyclesAndDuplicateSuccessors) {
  TaskGraph cycle;
  cycle.nodes.resize(3);
  cycle.nodes[0].successors = {1};
  cycle.nodes[1].successors = {2};
  cycle.nodes[2].successors = {1};
  cycle.nodes[1].label = "op #1 relu@cpu:0";
  cycle.task = [](int, int64_t) { return Status::Ok(); };
  Status s = cycle.Finalize();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("cycle"));

  TaskGraph dup;
  dup.nodes.resize(2);
  dup.nodes[0].successors = {1, 1};
  dup.task = cycle.task;
  EXPECT_THAT(dup.Finalize().message(), HasSubstr("twice"));

  TaskGraph range;
  range.nodes.resize(1);
  range.nodes[0].successors = {5};
  range.task = cycle.task;
  EXPECT_FALSE(range.Finalize().ok());
}

}  // namespace
}  // namespace parex
