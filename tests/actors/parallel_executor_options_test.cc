// ParallelExecutor options: a test executor sharing the trainer's
// parameters, dry_run, places from CPU_NUM, and memory_optimize (the buffer
// plan applied) giving the same bits as without it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "actors/executor/parallel_executor.h"
#include "graph/builder/examples.h"
#include "kernels/example_feed.h"
#include "kernels/reference_executor.h"

namespace parex {
namespace {

using ::testing::HasSubstr;

void Startup(const ExampleProgram& ex, Scope* scope) {
  ReferenceExecutor startup;
  ASSERT_TRUE(startup.Run(ex.startup, scope, {}, {}).ok());
}

const std::vector<Place> kTwo{Place::CPU(0), Place::CPU(1)};

TEST(ParallelOptionsTest, TestExecutorSharesTheTrainersParameters) {
  StatusOr<ExampleProgram> train = BuildExample(ExampleKind::kDigitsMlp);
  ExampleOptions forward_only;
  forward_only.minimize = false;
  StatusOr<ExampleProgram> test =
      BuildExample(ExampleKind::kDigitsMlp, forward_only);
  ASSERT_TRUE(train.ok() && test.ok());
  Scope scope;
  Startup(*train, &scope);
  auto trainer =
      ParallelExecutor::Create(kTwo, train->main, train->loss, &scope);
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  auto tester = ParallelExecutor::Create(kTwo, test->main, "", &scope, {}, {},
                                         trainer->get());
  ASSERT_TRUE(tester.ok()) << tester.status().ToString();
  const FeedMap batch = RandomExampleFeed(*train, 16, 1);
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE((*trainer)->Run(batch, {train->loss}).ok());
    // The tester sees this step's parameters: its prediction equals the
    // reference's on the trained scope.
    auto got = (*tester)->Run(batch, {test->prediction});
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ReferenceExecutor ref;
    auto want = ref.Run(test->main, &scope, batch, {test->prediction});
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    ASSERT_EQ((*got)[0].numel(), (*want)[0].numel());
    for (int64_t i = 0; i < (*got)[0].numel(); ++i) {
      EXPECT_NEAR((*got)[0].data<float>()[i], (*want)[0].data<float>()[i], 1e-6)
          << "step " << step << " element " << i;
    }
  }
  // Places must agree.
  auto other = ParallelExecutor::Create({Place::CPU(0)}, test->main, "", &scope,
                                        {}, {}, trainer->get());
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(other.status().message(), HasSubstr("share_vars_from"));
}

TEST(ParallelOptionsTest, DryRunSchedulesWithoutKernels) {
  StatusOr<ExampleProgram> ex = BuildExample(ExampleKind::kFitALine);
  ASSERT_TRUE(ex.ok());
  Scope scope;
  Startup(*ex, &scope);
  const Tensor before =
      scope.FindVar(ex->params[0].param)->GetTensor()->Clone();
  ExecutionStrategy exec;
  exec.dry_run = true;
  auto pe =
      ParallelExecutor::Create(kTwo, ex->main, ex->loss, &scope, {}, exec);
  ASSERT_TRUE(pe.ok());
  auto r = (*pe)->Run(RandomExampleFeed(*ex, 8, 2), {ex->loss});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE((*r)[0].defined());  // nothing computed
  const Tensor& after = *scope.FindVar(ex->params[0].param)->GetTensor();
  EXPECT_EQ(std::memcmp(before.raw_data(), after.raw_data(), before.bytes()),
            0);
}

TEST(ParallelOptionsTest, PlacesFromCpuNum) {
  StatusOr<ExampleProgram> ex = BuildExample(ExampleKind::kFitALine);
  ASSERT_TRUE(ex.ok());
  Scope scope;
  Startup(*ex, &scope);
  setenv("CPU_NUM", "3", 1);
  auto three = ParallelExecutor::Create({}, ex->main, ex->loss, &scope);
  unsetenv("CPU_NUM");
  ASSERT_TRUE(three.ok());
  EXPECT_EQ((*three)->places().size(), 3u);
  auto r = (*three)->Run(RandomExampleFeed(*ex, 9, 3), {ex->loss});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].numel(), 3);
  auto one = ParallelExecutor::Create({}, ex->main, ex->loss, &scope);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ((*one)->places().size(), 1u);
  auto cuda =
      ParallelExecutor::Create({Place::CUDA(0)}, ex->main, ex->loss, &scope);
  ASSERT_FALSE(cuda.ok());
  EXPECT_THAT(cuda.status().message(), HasSubstr("cuda:0"));
}

TEST(ParallelOptionsTest, MemoryOptimizeGivesTheSameBits) {
  StatusOr<ExampleProgram> ex = BuildExample(ExampleKind::kFashionCnn);
  ASSERT_TRUE(ex.ok());
  std::vector<FeedMap> batches;
  for (int s = 0; s < 4; ++s)
    batches.push_back(RandomExampleFeed(*ex, 8, 10 + s));
  auto train = [&](bool optimize, std::vector<float>* losses,
                   std::vector<Tensor>* params, int64_t* planned) {
    Scope scope;
    Startup(*ex, &scope);
    BuildStrategy build;
    build.memory_optimize = optimize;
    build.memory_plan_batch_per_place = 4;
    auto pe = ParallelExecutor::Create(kTwo, ex->main, ex->loss, &scope, build);
    ASSERT_TRUE(pe.ok()) << pe.status().ToString();
    for (const FeedMap& b : batches) {
      auto r = (*pe)->Run(b, {ex->loss});
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      for (int64_t i = 0; i < (*r)[0].numel(); ++i) {
        losses->push_back((*r)[0].data<float>()[i]);
      }
    }
    *planned =
        static_cast<int64_t>((*pe)->graph().memory_plan.buffer_bytes.size());
    for (const ParamGrad& pg : ex->params) {
      params->push_back(scope.FindVar(pg.param)->GetTensor()->Clone());
    }
  };
  std::vector<float> plain_losses, opt_losses;
  std::vector<Tensor> plain_params, opt_params;
  int64_t plain_buffers = 0, opt_buffers = 0;
  train(false, &plain_losses, &plain_params, &plain_buffers);
  train(true, &opt_losses, &opt_params, &opt_buffers);
  EXPECT_EQ(plain_buffers, 0);
  EXPECT_GT(opt_buffers, 0);
  EXPECT_EQ(plain_losses, opt_losses);
  for (size_t i = 0; i < plain_params.size(); ++i) {
    EXPECT_EQ(std::memcmp(plain_params[i].raw_data(), opt_params[i].raw_data(),
                          plain_params[i].bytes()),
              0)
        << ex->params[i].param;
  }
}

}  // namespace
}  // namespace parex
