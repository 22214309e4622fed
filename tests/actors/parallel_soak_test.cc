// Soak (issue 5, acceptance 4): 5,000 steps of the digits MLP on two places
// with the execution scopes dropped every step and every 100 steps:
// resident memory at step 500 and at step 5,000 differ by less than 5%.
// Its own binary (not built with the sanitizers, whose quarantine grows
// memory by design), so other tests do not move the figures.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <random>

#include "actors/executor/parallel_executor.h"
#include "graph/builder/examples.h"
#include "kernels/example_feed.h"
#include "kernels/reference_executor.h"

namespace parex {
namespace {

int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

void Soak(int drop_every) {
  StatusOr<ExampleProgram> ex = BuildExample(ExampleKind::kDigitsMlp);
  ASSERT_TRUE(ex.ok());
  Scope scope;
  ReferenceExecutor startup;
  ASSERT_TRUE(startup.Run(ex->startup, &scope, {}, {}).ok());
  ExecutionStrategy exec;
  exec.num_iteration_per_drop_scope = drop_every;
  auto pe = ParallelExecutor::Create({Place::CPU(0), Place::CPU(1)}, ex->main,
                                     ex->loss, &scope, {}, exec);
  ASSERT_TRUE(pe.ok()) << pe.status().ToString();
  // A few distinct batches, fed in turn.
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<FeedMap> batches(4);
  for (FeedMap& feed : batches) {
    Tensor x(DType::kFP32, {32, 64});
    Tensor y(DType::kInt64, {32, 1});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = normal(rng);
    for (int64_t i = 0; i < 32; ++i) y.data<int64_t>()[i] = rng() % 10;
    feed[ex->input] = x;
    feed[ex->label] = y;
  }
  int64_t at500 = 0, at5000 = 0;
  for (int step = 1; step <= 5000; ++step) {
    auto r = (*pe)->Run(batches[step % batches.size()], {ex->loss});
    ASSERT_TRUE(r.ok()) << "step " << step << ": " << r.status().ToString();
    if (step == 500) at500 = ResidentBytes();
    if (step == 5000) at5000 = ResidentBytes();
  }
  const double change = double(at5000 - at500) / at500;
  std::cout << "[ soak     ] drop every " << drop_every << ": RSS at step 500 "
            << at500 / 1024 << " KiB, at step 5000 " << at5000 / 1024
            << " KiB (" << change * 100 << "%)\n";
  EXPECT_LT(std::abs(change), 0.05);
}

TEST(ParallelSoakTest, DropScopeEveryStep) { Soak(1); }
TEST(ParallelSoakTest, DropScopeEvery100Steps) { Soak(100); }

}  // namespace
}  // namespace parex
