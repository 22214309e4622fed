// BuildStrategy::sync_batch_norm (issue 15): N places with synchronised
// batch norm train as the reference executor does on the whole batch (not
// as its per-place transpile), in AllReduce and Reduce modes, also with
// places holding different row counts; without it the same comparison
// fails. A program's own sync_batch_norm ops are synchronised either way,
// and run as batch_norm on one place.
#include "graph/builder/sync_batch_norm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "actors/executor/parallel_executor.h"
#include "graph/builder/examples.h"
#include "graph/ssa/multi_device_builder.h"
#include "kernels/example_feed.h"
#include "kernels/reference_executor.h"

namespace parex {
namespace {

using ::testing::HasSubstr;
using Mode = BuildStrategy::ReduceStrategy;

constexpr int kBnSteps = 8;

double BnRelDiff(double a, double b) {
  return std::abs(a - b) / std::max({std::abs(a), std::abs(b), 1e-3});
}

ExampleProgram FashionCnn() {
  StatusOr<ExampleProgram> ex = BuildExample(ExampleKind::kFashionCnn);
  EXPECT_TRUE(ex.ok()) << ex.status().ToString();
  return std::move(*ex);
}

// The trained parameters and batch norm's running statistics after the
// steps (Reduce mode keeps an optimizer's moments on the parameter's owner
// place only), and the loss of each step.
struct Outcome {
  std::vector<double> losses;
  std::map<std::string, Tensor> persistables;
};

void Collect(const ExampleProgram& ex, const Scope& scope, Outcome* run) {
  std::vector<std::string> names;
  for (const ParamGrad& pg : ex.params) names.push_back(pg.param);
  for (const auto& op : ex.main.global_block().ops()) {
    if (op->type() != "batch_norm" && op->type() != "sync_batch_norm") continue;
    names.push_back(op->FirstInput("Mean"));
    names.push_back(op->FirstInput("Variance"));
  }
  for (const std::string& name : names) {
    run->persistables[name] = scope.FindVar(name)->GetTensor()->Clone();
  }
}

Outcome Reference(const ExampleProgram& ex, const std::vector<FeedMap>& data) {
  Outcome run;
  Scope scope;
  ReferenceExecutor exec;
  EXPECT_TRUE(exec.Run(ex.startup, &scope, {}, {}).ok());
  for (const FeedMap& feed : data) {
    StatusOr<std::vector<Tensor>> r =
        exec.Run(ex.main, &scope, feed, {ex.loss});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return run;
    run.losses.push_back((*r)[0].data<float>()[0]);
  }
  Collect(ex, scope, &run);
  return run;
}

Outcome Parallel(const ExampleProgram& ex, const std::vector<FeedMap>& data,
                 int n, const BuildStrategy& strategy) {
  Outcome run;
  Scope scope;
  ReferenceExecutor startup;
  EXPECT_TRUE(startup.Run(ex.startup, &scope, {}, {}).ok());
  std::vector<Place> places;
  for (int p = 0; p < n; ++p) places.push_back(Place::CPU(p));
  auto pe =
      ParallelExecutor::Create(places, ex.main, ex.loss, &scope, strategy);
  EXPECT_TRUE(pe.ok()) << pe.status().ToString();
  if (!pe.ok()) return run;
  for (const FeedMap& feed : data) {
    StatusOr<std::vector<Tensor>> r = (*pe)->Run(feed, {ex.loss});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return run;
    double mean = 0;  // equal chunks: the mean of the places' mean losses
    for (int64_t p = 0; p < (*r)[0].numel(); ++p)
      mean += (*r)[0].data<float>()[p];
    run.losses.push_back(mean / (*r)[0].numel());
  }
  Collect(ex, scope, &run);
  return run;
}

// The worst relative difference of losses and of every persistable element.
double Worst(const Outcome& a, const Outcome& b) {
  double worst = 0;
  EXPECT_EQ(a.losses.size(), b.losses.size());
  for (size_t s = 0; s < std::min(a.losses.size(), b.losses.size()); ++s) {
    worst = std::max(worst, BnRelDiff(a.losses[s], b.losses[s]));
  }
  EXPECT_EQ(a.persistables.size(), b.persistables.size());
  for (const auto& [name, t] : a.persistables) {
    auto it = b.persistables.find(name);
    if (it == b.persistables.end()) {
      ADD_FAILURE() << name;
      continue;
    }
    for (int64_t i = 0; i < t.numel(); ++i) {
      worst = std::max(
          worst, BnRelDiff(t.data<float>()[i], it->second.data<float>()[i]));
    }
  }
  return worst;
}

struct BnCase {
  int places;
  Mode mode;
};

class SyncBatchNormTest : public ::testing::TestWithParam<BnCase> {};

TEST_P(SyncBatchNormTest, PlacesTrainAsOnePlaceWithTheWholeBatch) {
  const BnCase c = GetParam();
  const ExampleProgram ex = FashionCnn();
  std::vector<FeedMap> data;
  for (int s = 0; s < kBnSteps; ++s)
    data.push_back(RandomExampleFeed(ex, 24, 40 + s));
  BuildStrategy strategy;
  strategy.reduce = c.mode;
  strategy.sync_batch_norm = true;
  const Outcome ref = Reference(ex, data);
  const Outcome synced = Parallel(ex, data, c.places, strategy);
  EXPECT_LT(Worst(synced, ref), 1e-4);
  // Without it each place normalises with its own rows' statistics: the
  // same comparison fails.
  strategy.sync_batch_norm = false;
  EXPECT_GT(Worst(Parallel(ex, data, c.places, strategy), ref), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(
    Places, SyncBatchNormTest,
    ::testing::Values(BnCase{2, Mode::kAllReduce}, BnCase{3, Mode::kAllReduce},
                      BnCase{2, Mode::kReduce}, BnCase{4, Mode::kReduce}),
    [](const ::testing::TestParamInfo<BnCase>& info) {
      return std::to_string(info.param.places) + "places_" +
             (info.param.mode == Mode::kReduce ? "reduce" : "allreduce");
    });

// 5 rows over 2 places (2 and 3): the batch statistics count every row once,
// so each batch norm's output and saved statistics are the whole batch's.
TEST(SyncBatchNormUnevenTest, PlacesWithDifferentRowCounts) {
  const ExampleProgram ex = FashionCnn();
  std::vector<std::string> fetch;
  for (const auto& op : ex.main.global_block().ops()) {
    if (op->type() == "batch_norm") {
      fetch.push_back(op->FirstOutput("Y"));
      fetch.push_back(op->FirstOutput("SavedMean"));
    }
  }
  ASSERT_EQ(fetch.size(), 4u);
  const FeedMap feed = RandomExampleFeed(ex, 5, 3);
  Scope ref_scope, par_scope;
  ReferenceExecutor exec;
  ASSERT_TRUE(exec.Run(ex.startup, &ref_scope, {}, {}).ok());
  ASSERT_TRUE(exec.Run(ex.startup, &par_scope, {}, {}).ok());
  StatusOr<std::vector<Tensor>> want =
      exec.Run(ex.main, &ref_scope, feed, fetch);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  BuildStrategy strategy;
  strategy.sync_batch_norm = true;
  auto pe = ParallelExecutor::Create({Place::CPU(0), Place::CPU(1)}, ex.main,
                                     ex.loss, &par_scope, strategy);
  ASSERT_TRUE(pe.ok()) << pe.status().ToString();
  // Run splits the 5 rows as 2 and 3 and concatenates the fetches.
  StatusOr<std::vector<Tensor>> merged = (*pe)->Run(feed, fetch);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  for (size_t f = 0; f < fetch.size(); f += 2) {
    const Tensor& y = (*merged)[f];
    ASSERT_EQ(y.dims(), (*want)[f].dims()) << fetch[f];
    double worst = 0;
    for (int64_t i = 0; i < y.numel(); ++i) {
      worst = std::max(
          worst, BnRelDiff(y.data<float>()[i], (*want)[f].data<float>()[i]));
    }
    EXPECT_LT(worst, 1e-5) << fetch[f];
    // SavedMean from both places, concatenated: each is the whole batch's.
    const Tensor& saved = (*merged)[f + 1];
    const int64_t c = (*want)[f + 1].numel();
    ASSERT_EQ(saved.numel(), 2 * c) << fetch[f + 1];
    for (int64_t i = 0; i < 2 * c; ++i) {
      EXPECT_NEAR(saved.data<float>()[i], (*want)[f + 1].data<float>()[i % c],
                  1e-6)
          << fetch[f + 1] << "[" << i << "]";
    }
  }
}

// A program's own sync_batch_norm ops (Paddle's SyncBatchNorm) are
// synchronised without the strategy's flag; the reference executor runs
// them as batch_norm.
TEST(SyncBatchNormOpTest, AProgramsOwnSyncBatchNormIsSynchronised) {
  ExampleProgram ex = FashionCnn();
  ExampleProgram renamed = ex;
  proto::ProgramDesc desc = ex.main.proto();
  int renamed_ops = 0;
  for (proto::OpDesc& op : *desc.mutable_blocks(0)->mutable_ops()) {
    if (op.type() == "batch_norm" || op.type() == "batch_norm_grad") {
      op.set_type("sync_" + op.type());
      ++renamed_ops;
    }
  }
  ASSERT_EQ(renamed_ops, 4);
  renamed.main = Program(std::move(desc));
  EXPECT_TRUE(HasBatchNormToSync(renamed.main, false));
  EXPECT_FALSE(HasBatchNormToSync(ex.main, false));
  std::vector<FeedMap> data;
  for (int s = 0; s < 4; ++s) data.push_back(RandomExampleFeed(ex, 24, 60 + s));
  const Outcome ref = Reference(ex, data);
  // One place: batch_norm's kernels, the same bits.
  const Outcome one = Reference(renamed, data);
  EXPECT_EQ(one.losses, ref.losses);
  EXPECT_LT(Worst(Parallel(renamed, data, 2, BuildStrategy{}), ref), 1e-4);
}

// The rewrite: three stages forward, two backward, an all-reduce after each
// stage's sums; errors name the op.
TEST(SyncBatchNormOpTest, TheGraphHasTheStagesAndTheirAllReduces) {
  const ExampleProgram ex = FashionCnn();
  BuildStrategy strategy;
  strategy.sync_batch_norm = true;
  StatusOr<SsaGraph> graph = BuildMultiDeviceGraph(
      ex.main, {Place::CPU(0), Place::CPU(1)}, ex.loss, strategy);
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  std::map<std::string, int> count;
  for (const SsaOp& op : graph->ops()) {
    ++count[op.type];
    if (op.kind == SsaOpKind::kAllReduce &&
        op.var_names[0].find(".sync_") != std::string::npos) {
      ++count["stats_all_reduce"];
    }
  }
  EXPECT_EQ(count["batch_norm"], 0);
  EXPECT_EQ(count["batch_norm_grad"], 0);
  for (const char* stage : {"sync_bn_sum", "sync_bn_sq_dev", "sync_bn_apply",
                            "sync_bn_grad_sum", "sync_bn_grad_apply"}) {
    EXPECT_EQ(count[stage], 4) << stage;  // 2 batch norms x 2 places
  }
  EXPECT_EQ(count["stats_all_reduce"], 6);
  // One place: nothing to synchronise, batch_norm as it is.
  StatusOr<SsaGraph> single =
      BuildMultiDeviceGraph(ex.main, {Place::CPU(0)}, ex.loss, strategy);
  ASSERT_TRUE(single.ok());
  int bn = 0;
  for (const SsaOp& op : single->ops()) bn += op.type == "batch_norm";
  EXPECT_EQ(bn, 2);
  // A gradient op whose forward op is missing is named.
  proto::ProgramDesc desc = ex.main.proto();
  auto* ops = desc.mutable_blocks(0)->mutable_ops();
  for (int i = 0; i < ops->size(); ++i) {
    if (ops->Get(i).type() == "batch_norm") {
      ops->Mutable(i)->set_type("sync_batch_norm");
      ops->Mutable(i)->clear_attrs();
      OpDesc view(ops->Mutable(i), 0, i);
      view.SetAttr<bool>("use_global_stats", true);
      break;
    }
  }
  StatusOr<Program> rewritten = SyncBatchNorm(Program(std::move(desc)), true);
  ASSERT_FALSE(rewritten.ok());
  EXPECT_THAT(rewritten.status().message(),
              HasSubstr("no synchronised batch norm wrote its SavedMean"));
  EXPECT_THAT(rewritten.status().message(), HasSubstr("batch_norm_grad"));
}

}  // namespace
}  // namespace parex
