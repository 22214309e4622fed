// ActorRunner: every node runs once per step, after all its predecessors;
// the first task error fails the step and the next step starts clean.
#include "actors/runtime/actor_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <random>
#include <thread>
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
      if (std::find(succ.begin(), succ.end(), s) == succ.end())
        succ.push_back(s);
    }
    g->nodes[i].successors = succ;
  }
  return g;
}

ActorRunnerOptions Options(int threads, SchedulerPolicy policy) {
  ActorRunnerOptions options;
  options.num_threads = threads;
  options.scheduler = policy;
  return options;
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
    for (int variant = 0; variant < 4; ++variant) {
      // 0: CAF's stealing policy; 1: CAF's sharing; 2: resume-here; 3:
      // resume-here with nodes on places, whose linear chains run fused, and
      // sparse fan-out so chains exist.
      const SchedulerPolicy policy = variant == 0 ? SchedulerPolicy::kStealing
                                     : variant == 1
                                         ? SchedulerPolicy::kSharing
                                         : SchedulerPolicy::kResumeHere;
      std::shared_ptr<TaskGraph> g =
          RandomDag(300, variant == 3 ? 1 : 3, 7 + threads);
      if (variant == 3) {
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
      options.scheduler = policy;
      options.fuse_chains = variant == 3;
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
  auto runner =
      ActorRunner::Create(g, Options(2, SchedulerPolicy::kResumeHere));
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

// caller_runs: with one worker, Run's caller resumes the step's actors
// itself, branches included, in order; errors end the step as with a worker.
// Without it the worker runs them and the caller only waits.
TEST(ActorRunnerTest, CallerRunsTheStepOnItsOwnThread) {
  for (const bool caller_runs : {false, true}) {
    for (const bool fuse : {false, true}) {
      std::shared_ptr<TaskGraph> g = RandomDag(200, fuse ? 1 : 3, 5);
      for (int i = 0; i < g->size(); ++i) g->nodes[i].place = (i / 40) % 2;
      std::vector<std::vector<int>> preds(g->size());
      for (int i = 0; i < g->size(); ++i) {
        for (int s : g->nodes[i].successors) preds[s].push_back(i);
      }
      auto rec = std::make_shared<Recorder>(g->size());
      auto ran_on = std::make_shared<std::vector<std::thread::id>>(g->size());
      std::atomic<int> order_violations{0};
      std::atomic<int64_t> fail_step{-1};
      g->task = [&, rec, ran_on](int node, int64_t step) -> Status {
        if (step == fail_step.load() && node == 120) {
          return Internal("node 120 failed on purpose");
        }
        for (int p : preds[node]) {
          if (rec->runs[p].load() != step + 1) ++order_violations;
        }
        (*ran_on)[node] = std::this_thread::get_id();
        rec->runs[node].fetch_add(1);
        return Status::Ok();
      };
      ASSERT_TRUE(g->Finalize().ok());
      ActorRunnerOptions options = Options(1, SchedulerPolicy::kResumeHere);
      options.fuse_chains = fuse;
      options.caller_runs = caller_runs;
      StatusOr<std::unique_ptr<ActorRunner>> runner =
          ActorRunner::Create(g, options);
      ASSERT_TRUE(runner.ok()) << runner.status().ToString();
      for (int step = 0; step < 20; ++step) {
        Status s = (*runner)->Run(step);
        ASSERT_TRUE(s.ok()) << s.ToString();
      }
      ExpectOrdered(*g, *rec, 20);
      EXPECT_EQ(order_violations.load(), 0);
      int on_caller = 0;
      for (const std::thread::id& t : *ran_on) {
        on_caller += t == std::this_thread::get_id();
      }
      EXPECT_EQ(on_caller, caller_runs ? g->size() : 0)
          << "caller_runs " << caller_runs << ", fuse " << fuse;
      fail_step = 20;
      Status s = (*runner)->Run(20);
      ASSERT_FALSE(s.ok());
      EXPECT_THAT(s.message(), HasSubstr("failed on purpose"));
      fail_step = -1;
      Status next = (*runner)->Run(21);
      EXPECT_TRUE(next.ok()) << next.ToString();
    }
  }
}

TEST(ActorRunnerTest, EmptyAndSingleNodeGraphs) {
  auto empty = std::make_shared<TaskGraph>();
  empty->task = [](int, int64_t) { return Status::Ok(); };
  ASSERT_TRUE(empty->Finalize().ok());
  auto r0 =
      ActorRunner::Create(empty, Options(1, SchedulerPolicy::kResumeHere));
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
  auto r1 = ActorRunner::Create(one, Options(2, SchedulerPolicy::kStealing));
  ASSERT_TRUE(r1.ok());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE((*r1)->Run(i).ok());
  EXPECT_EQ(count.load(), 100);
}

TEST(ActorRunnerTest, RunnersShareOneSystemAndStopIndependently) {
  std::shared_ptr<WorkerPool> system = WorkerPool::Create(2);
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

// A finalized graph from successor lists, every node on `place`.
TaskGraph Graph(std::vector<std::vector<int>> succ, int place = 0) {
  TaskGraph g;
  g.nodes.resize(succ.size());
  for (size_t i = 0; i < succ.size(); ++i) {
    g.nodes[i].successors = succ[i];
    g.nodes[i].place = place;
  }
  g.task = [](int, int64_t) { return Status::Ok(); };
  EXPECT_TRUE(g.Finalize().ok());
  return g;
}

TEST(ChainNextTest, HandBuiltShapes) {
  // A chain: each node continues the one before.
  EXPECT_EQ(ChainNext(Graph({{1}, {2}, {}})), (std::vector<int>{1, 2, -1}));
  // A diamond 0 -> {1, 2} -> 3: 0 continues with one branch; 3 waits for
  // two unordered predecessors, so no one continues with it.
  EXPECT_EQ(ChainNext(Graph({{1, 2}, {3}, {3}, {}})),
            (std::vector<int>{1, -1, -1, -1}));
  // The longer branch is the one continued: 0 -> 1, 0 -> 2 -> 3.
  EXPECT_EQ(ChainNext(Graph({{1, 2}, {}, {3}, {}})),
            (std::vector<int>{2, -1, 3, -1}));
  // A join whose other input comes from an ancestor: 0 -> 1 -> 2, 0 -> 2.
  // 2 is ready when 1 finishes, so 1 continues with it.
  TaskGraph join = Graph({{1, 2}, {2}, {}});
  EXPECT_EQ(ChainNext(join), (std::vector<int>{1, 2, -1}));
  // ... unless joins are off (graphs above the size limit).
  EXPECT_EQ(ChainNext(join, 0), (std::vector<int>{1, -1, -1}));
  // Nodes on other places, or on none, are never chained.
  TaskGraph places = Graph({{1}, {2}, {}});
  places.nodes[1].place = 1;
  EXPECT_EQ(ChainNext(places), (std::vector<int>{-1, -1, -1}));
  EXPECT_EQ(ChainNext(Graph({{1}, {}}, -1)), (std::vector<int>{-1, -1}));
}

// Everything ChainNext promises, on random DAGs over two places: next[u] is
// a successor of u on its place, every other predecessor of it is an
// ancestor of u (checked by a search here, not by the closure it uses), and
// no node continues two others.
TEST(ChainNextTest, RandomDagsKeepTheirOrder) {
  int joins = 0;  // over all seeds: nodes with several inputs continued
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::shared_ptr<TaskGraph> g = RandomDag(120, 1 + seed % 3, seed);
    for (int i = 0; i < g->size(); ++i) g->nodes[i].place = (i / 7) % 2;
    g->task = [](int, int64_t) { return Status::Ok(); };
    ASSERT_TRUE(g->Finalize().ok());
    const std::vector<int> next = ChainNext(*g);
    ASSERT_EQ(static_cast<int>(next.size()), g->size());
    std::vector<std::vector<int>> preds(g->size());
    for (int u = 0; u < g->size(); ++u) {
      for (int v : g->nodes[u].successors) preds[v].push_back(u);
    }
    auto reaches = [&](int from, int to) {
      std::vector<int> stack = {from};
      std::vector<bool> seen(g->size(), false);
      while (!stack.empty()) {
        const int x = stack.back();
        stack.pop_back();
        if (x == to) return true;
        for (int s : g->nodes[x].successors) {
          if (!seen[s]) {
            stack.push_back(s);
            seen[s] = true;
          }
        }
      }
      return false;
    };
    std::vector<int> continued(g->size(), 0);
    int chained = 0;
    for (int u = 0; u < g->size(); ++u) {
      const int v = next[u];
      if (v < 0) continue;
      ++chained;
      const auto& succ = g->nodes[u].successors;
      EXPECT_NE(std::find(succ.begin(), succ.end(), v), succ.end());
      EXPECT_EQ(g->nodes[v].place, g->nodes[u].place);
      EXPECT_EQ(++continued[v], 1) << "node " << v;
      for (int p : preds[v]) {
        if (p != u) {
          EXPECT_TRUE(reaches(p, u)) << p << " -> " << u;
        }
      }
      if (preds[v].size() > 1) ++joins;
    }
    EXPECT_GT(chained, 0) << "seed " << seed;
  }
  EXPECT_GT(joins, 0);
}

// The coordinator runs `begin` before any node and `end` after every node;
// a failing `begin` runs no node, and a failing `end` fails the step.
TEST(ActorRunnerTest, StepHooksRunAroundTheNodes) {
  std::shared_ptr<TaskGraph> g = RandomDag(60, 2, 11);
  auto ran = std::make_shared<std::atomic<int>>(0);
  g->task = [ran](int, int64_t) {
    ran->fetch_add(1);
    return Status::Ok();
  };
  ASSERT_TRUE(g->Finalize().ok());
  auto runner =
      ActorRunner::Create(g, Options(2, SchedulerPolicy::kResumeHere));
  ASSERT_TRUE(runner.ok());
  int at_begin = -1, at_end = -1;
  bool end_ran = false, end_ok = false;
  bool fail_begin = false, fail_end = false;
  StepHooks hooks;
  hooks.begin = [&]() -> Status {
    at_begin = ran->load();
    return fail_begin ? InvalidArgument("feed 'x' is bad") : Status::Ok();
  };
  hooks.end = [&](bool nodes_ran, bool ok) -> Status {
    at_end = ran->load();
    end_ran = nodes_ran;
    end_ok = ok;
    return fail_end ? Internal("fetch failed") : Status::Ok();
  };
  ASSERT_TRUE((*runner)->Run(0, &hooks).ok());
  EXPECT_EQ(at_begin, 0);
  EXPECT_EQ(at_end, 60);
  EXPECT_TRUE(end_ran);
  EXPECT_TRUE(end_ok);

  fail_begin = true;
  Status s = (*runner)->Run(1, &hooks);
  EXPECT_THAT(s.message(), HasSubstr("feed 'x' is bad"));
  EXPECT_EQ(ran->load(), 60);  // no node ran
  EXPECT_FALSE(end_ran);

  fail_begin = false;
  fail_end = true;
  s = (*runner)->Run(2, &hooks);
  EXPECT_THAT(s.message(), HasSubstr("fetch failed"));
  EXPECT_EQ(ran->load(), 120);

  fail_end = false;
  EXPECT_TRUE((*runner)->Run(3, &hooks).ok());
  EXPECT_EQ(ran->load(), 180);
}

}  // namespace
}  // namespace parex
