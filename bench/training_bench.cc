// Issue 5 benchmark (b): Fashion-MNIST MLP and CNN training throughput
// (samples/s) with the ParallelExecutor on 1 and 2 CPU places against the
// reference executor, measured in the same run. Printed, never asserted.
// Targets: executor overhead on 1 place <= 5% of the reference's step time;
// 2 places >= 1.8x one place.
//
//   build/bench/training_bench [--steps N] [--batch B] [--quick]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "actors/parallel_executor.h"
#include "apps/models.h"

namespace parex {
namespace {

using Clock = std::chrono::steady_clock;


// Median seconds per step over `rounds` rounds of `steps` steps.
template <typename Step>
double SecondsPerStep(Step step, int steps, int rounds) {
  for (int i = 0; i < 3; ++i) step();  // warm up
  std::vector<double> per_round;
  for (int r = 0; r < rounds; ++r) {
    const auto start = Clock::now();
    for (int i = 0; i < steps; ++i) step();
    per_round.push_back(
        std::chrono::duration<double>(Clock::now() - start).count() / steps);
  }
  std::sort(per_round.begin(), per_round.end());
  return per_round[per_round.size() / 2];
}

int Run(int argc, char** argv) {
  int steps = 20, rounds = 5;
  int64_t batch = 64;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) steps = 2, rounds = 1;
    if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) steps = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--batch") && i + 1 < argc) batch = std::atoll(argv[++i]);
  }
  std::printf("| model | reference samples/s | 1 place | overhead | 2 places | 2 vs 1 |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (ExampleKind kind : {ExampleKind::kFashionMlp, ExampleKind::kFashionCnn}) {
    StatusOr<ExampleProgram> ex = BuildExample(kind);
    if (!ex.ok()) {
      std::fprintf(stderr, "%s\n", ex.status().ToString().c_str());
      return 1;
    }
    const FeedMap feed = RandomExampleFeed(*ex, batch, 7);
    ReferenceExecutor startup;
    Scope ref_scope;
    if (!startup.Run(ex->startup, &ref_scope, {}, {}).ok()) return 1;
    ReferenceExecutor ref;
    bool ok = true;
    const double t_ref = SecondsPerStep(
        [&] { ok = ok && ref.Run(ex->main, &ref_scope, feed, {ex->loss}).ok(); },
        steps, rounds);
    double t_pe[3] = {0, 0, 0};
    for (int n : {1, 2}) {
      Scope scope;
      if (!startup.Run(ex->startup, &scope, {}, {}).ok()) return 1;
      std::vector<Place> places;
      for (int p = 0; p < n; ++p) places.push_back(Place::CPU(p));
      ExecutionStrategy exec;
      exec.num_threads = n;  // one worker per place: the 2-core budget
      auto pe = ParallelExecutor::Create(places, ex->main, ex->loss, &scope, {}, exec);
      if (!pe.ok()) {
        std::fprintf(stderr, "%s\n", pe.status().ToString().c_str());
        return 1;
      }
      t_pe[n] = SecondsPerStep(
          [&] { ok = ok && (*pe)->Run(feed, {ex->loss}).ok(); }, steps, rounds);
    }
    if (!ok) {
      std::fprintf(stderr, "a step failed\n");
      return 1;
    }
    std::printf("| %s (batch %lld) | %.0f | %.0f | %+.1f%% | %.0f | %.2fx |\n",
                ExampleName(kind), static_cast<long long>(batch), batch / t_ref,
                batch / t_pe[1], (t_pe[1] / t_ref - 1) * 100, batch / t_pe[2],
                t_pe[1] / t_pe[2]);
  }
  return 0;
}

}  // namespace
}  // namespace parex

int main(int argc, char** argv) { return parex::Run(argc, argv); }
