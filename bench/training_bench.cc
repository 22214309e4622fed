// Issue 5 benchmark (b): Fashion-MNIST MLP and CNN training throughput
// (samples/s) with the ParallelExecutor on 1 and 2 CPU places against the
// reference executor, measured in the same run. Printed, never asserted.
// Targets: executor overhead on 1 place <= 5% of the reference's step time;
// 2 places >= 1.8x one place. Two places are measured in AllReduce mode
// (every place runs the whole optimizer) and in Reduce mode (each
// parameter's optimizer runs on one place; CPU places share parameters).
// The four runners take turns in rounds; medians over rounds are printed.
//
//   build/bench/training_bench [--steps N] [--batch B] [--quick]
//   build/bench/training_bench --step-time --model NAME --places P
//                              [--batch B] [--steps N] [--mode reduce]
//       one configuration alone: the mean ms of N steps of NAME on P CPU
//       places (one worker each; AllReduce unless --mode reduce) after 3
//       warm-up steps, printed as "step_ms X" (bench/pytorch_peer.py reads
//       it). The MLP's rounds run 10x --steps (its steps are ~15x shorter).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/executor/parallel_executor.h"
#include "apps/models.h"
#include "kernels/reference_executor.h"

namespace parex {
namespace {

using Clock = std::chrono::steady_clock;

// One way to run a training step, and its step times (seconds per step,
// one entry per round).
struct Runner {
  std::string name;
  std::function<bool()> step;
  std::vector<double> per_round;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runners take turns, `steps` steps each per round, so drift in machine
// load spreads over all of them.
void Measure(std::vector<Runner>& runners, int steps, int rounds, bool* ok) {
  for (Runner& r : runners) {
    for (int i = 0; i < 3; ++i) *ok = r.step() && *ok;  // warm up
  }
  for (int round = 0; round < rounds; ++round) {
    for (size_t k = 0; k < runners.size(); ++k) {
      Runner& r = runners[(round + k) % runners.size()];
      const auto start = Clock::now();
      for (int i = 0; i < steps; ++i) *ok = r.step() && *ok;
      r.per_round.push_back(
          std::chrono::duration<double>(Clock::now() - start).count() / steps);
    }
  }
}

// --step-time: one executor's mean step time, for a peer measured by
// another process (bench/pytorch_peer.py).
int StepTime(const std::string& model, int places_count, int64_t batch,
             int steps, bool reduce) {
  StatusOr<ExampleKind> kind = ParseExampleKind(model);
  if (!kind.ok() || places_count < 1 || batch < 1 || steps < 1) {
    std::fprintf(stderr,
                 "--step-time: bad --model, --places, --batch or --steps\n");
    return 2;
  }
  StatusOr<ExampleProgram> ex = BuildExample(*kind);
  if (!ex.ok()) {
    std::fprintf(stderr, "%s\n", ex.status().ToString().c_str());
    return 1;
  }
  const FeedMap feed = RandomExampleFeed(*ex, batch, 7);
  Scope scope;
  ReferenceExecutor startup;
  if (!startup.Run(ex->startup, &scope, {}, {}).ok()) return 1;
  std::vector<Place> places;
  for (int p = 0; p < places_count; ++p) places.push_back(Place::CPU(p));
  ExecutionStrategy exec;
  exec.num_threads = places_count;
  BuildStrategy build;
  if (reduce) build.reduce = BuildStrategy::ReduceStrategy::kReduce;
  auto pe =
      ParallelExecutor::Create(places, ex->main, ex->loss, &scope, build, exec);
  if (!pe.ok()) {
    std::fprintf(stderr, "%s\n", pe.status().ToString().c_str());
    return 1;
  }
  // Warm-up: 3 steps and at least 0.3 s (first-touch page faults, oneDNN's
  // JIT, idle cores waking: 20 steps after 3 warm-up steps of the 2-place
  // MLP at batch 256 timed 1.8-3.9 ms a step, 1.86 after a longer one).
  // bench/pytorch_peer.py warms PyTorch up the same way.
  const auto warm = Clock::now();
  for (int i = 0; i < 3 || Clock::now() - warm < std::chrono::milliseconds(300);
       ++i) {
    auto s = (*pe)->Run(feed, {ex->loss});
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.status().ToString().c_str());
      return 1;
    }
  }
  const auto start = Clock::now();
  for (int i = 0; i < steps; ++i) {
    auto s = (*pe)->Run(feed, {ex->loss});
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.status().ToString().c_str());
      return 1;
    }
  }
  const double ms =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count() /
      steps;
  std::printf("step_ms %.4f\n", ms);
  return 0;
}

int Run(int argc, char** argv) {
  int steps = 10, rounds = 9;
  bool step_time = false;
  std::string model;
  int places_count = 1;
  int64_t batch = 64;
  bool reduce = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) steps = 2, rounds = 1;
    if (!std::strcmp(argv[i], "--steps") && i + 1 < argc)
      steps = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--batch") && i + 1 < argc)
      batch = std::atoll(argv[++i]);
    if (!std::strcmp(argv[i], "--step-time")) step_time = true;
    if (!std::strcmp(argv[i], "--model") && i + 1 < argc) model = argv[++i];
    if (!std::strcmp(argv[i], "--places") && i + 1 < argc)
      places_count = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--mode") && i + 1 < argc)
      reduce = !std::strcmp(argv[++i], "reduce");
  }
  if (step_time) return StepTime(model, places_count, batch, steps, reduce);
  std::printf(
      "| model | reference samples/s | 1 place | overhead | 2 places "
      "(AllReduce) | 2 vs 1 | 2 places (Reduce) | 2 vs 1 |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (ExampleKind kind :
       {ExampleKind::kFashionMlp, ExampleKind::kFashionCnn}) {
    StatusOr<ExampleProgram> ex = BuildExample(kind);
    if (!ex.ok()) {
      std::fprintf(stderr, "%s\n", ex.status().ToString().c_str());
      return 1;
    }
    const FeedMap feed = RandomExampleFeed(*ex, batch, 7);
    ReferenceExecutor startup;
    // One scope per runner, each initialised by the startup program.
    std::vector<std::unique_ptr<Scope>> scopes;
    for (int i = 0; i < 4; ++i) {
      scopes.push_back(std::make_unique<Scope>());
      if (!startup.Run(ex->startup, scopes.back().get(), {}, {}).ok()) return 1;
    }
    ReferenceExecutor ref;
    std::vector<Runner> runners;
    runners.push_back(
        {"reference",
         [&] {
           return ref.Run(ex->main, scopes[0].get(), feed, {ex->loss}).ok();
         },
         {}});
    std::vector<std::unique_ptr<ParallelExecutor>> executors;
    const BuildStrategy::ReduceStrategy modes[3] = {
        BuildStrategy::ReduceStrategy::kAllReduce,
        BuildStrategy::ReduceStrategy::kAllReduce,
        BuildStrategy::ReduceStrategy::kReduce};
    for (int k = 0; k < 3; ++k) {
      const int n = k == 0 ? 1 : 2;
      std::vector<Place> places;
      for (int p = 0; p < n; ++p) places.push_back(Place::CPU(p));
      BuildStrategy build;
      build.reduce = modes[k];
      ExecutionStrategy exec;
      exec.num_threads = n;  // one worker per place: the 2-core budget
      auto pe = ParallelExecutor::Create(places, ex->main, ex->loss,
                                         scopes[k + 1].get(), build, exec);
      if (!pe.ok()) {
        std::fprintf(stderr, "%s\n", pe.status().ToString().c_str());
        return 1;
      }
      ParallelExecutor* raw = pe->get();
      executors.push_back(std::move(*pe));
      runners.push_back({std::to_string(n) + " places",
                         [&, raw] { return raw->Run(feed, {ex->loss}).ok(); },
                         {}});
    }
    bool ok = true;
    // About 0.1 s per runner and round on this VM: the MLP's ~1 ms steps
    // ten times as many as the CNN's ~15 ms ones, so that a round's first,
    // cache-cold step weighs the same in both.
    const int model_steps =
        kind == ExampleKind::kFashionMlp && rounds > 1 ? 10 * steps : steps;
    Measure(runners, model_steps, rounds, &ok);
    if (!ok) {
      std::fprintf(stderr, "a step failed\n");
      return 1;
    }
    double t[4];
    for (int i = 0; i < 4; ++i) t[i] = Median(runners[i].per_round);
    std::printf(
        "| %s (batch %lld) | %.0f | %.0f | %+.1f%% | %.0f | %.2fx | %.0f | "
        "%.2fx |\n",
        ExampleName(kind), static_cast<long long>(batch), batch / t[0],
        batch / t[1], (t[1] / t[0] - 1) * 100, batch / t[2], t[1] / t[2],
        batch / t[3], t[1] / t[3]);
  }
  return 0;
}

}  // namespace
}  // namespace parex

int main(int argc, char** argv) { return parex::Run(argc, argv); }
