// The multi-device pass over the example training programs (issue 4,
// acceptance 1-3 and 7): op counts per kind, one collective per parameter
// between every place's producer of its gradient and every optimizer op
// reading it, versions, Reduce-mode ownership and broadcasts, fused buckets,
// gradient scale strategies, sparse gradients, and the errors bad programs
// get.
#include "graph/ssa/multi_device_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "graph/builder/backward.h"
#include "graph/builder/layers.h"
#include "graph/builder/optimizer.h"
#include "graph/builder/program_builder.h"
#include "tests/graph/ssa/ssa_test_util.h"
#include "tests/paddle_models.h"

namespace parex {
namespace {

using testing::CountComputation;
using testing::CountOps;
using testing::CpuPlaces;
using testing::CudaPlaces;
using ::testing::HasSubstr;
using testing::TrainingProgram;
using Mode = BuildStrategy::ReduceStrategy;

bool IsOptimizerWithParam(const OpDesc& op) {
  return (OpRole(op) & kOpRoleOptimize) != 0 && !OpRoleVar(op).empty();
}

// The computation op replicating program op `index` on `place`, or -1.
int ReplicaOf(const SsaGraph& g, int index, int place) {
  for (const SsaOp& op : g.ops()) {
    if (op.kind == SsaOpKind::kComputation && op.program_op == index &&
        op.place == place) {
      return op.id;
    }
  }
  return -1;
}

// Acceptance 1: for every parameter, exactly one collective merges its
// gradient; every place's producer of the gradient precedes it; every
// optimizer op reading the gradient follows it and reads the version it
// wrote.
void ExpectGradientsMerged(const SsaGraph& g) {
  StatusOr<SsaReachability> reach = SsaReachability::Create(g);
  ASSERT_TRUE(reach.ok()) << reach.status().ToString();
  const Block& block = g.program().global_block();
  for (const GradInfo& info : g.grads) {
    SCOPED_TRACE(info.grad);
    int collectives = 0;
    for (const SsaOp& op : g.ops()) {
      if (IsCollective(op.kind) && op.kind != SsaOpKind::kBroadcast &&
          std::count(op.var_names.begin(), op.var_names.end(), info.grad)) {
        ++collectives;
        EXPECT_EQ(op.id, info.collective);
      }
    }
    EXPECT_EQ(collectives, 1);
    const int c = info.collective;
    ASSERT_GE(c, 0);
    for (int p = 0; p < g.num_places(); ++p) {
      const int producer = ReplicaOf(g, info.program_op, p);
      ASSERT_GE(producer, 0) << "no producer on place " << p;
      EXPECT_TRUE(reach->Reaches(producer, c)) << g.OpLabel(producer);
    }
    for (const SsaOp& op : g.ops()) {
      if (op.kind != SsaOpKind::kComputation) continue;
      if ((OpRole(block.op(op.program_op)) & kOpRoleOptimize) == 0) continue;
      for (int v : op.inputs) {
        if (g.var(v).name != info.grad) continue;
        EXPECT_TRUE(reach->Reaches(c, op.id)) << g.OpLabel(op.id);
        EXPECT_EQ(g.var(v).generator, c)
            << g.OpLabel(op.id) << " reads " << g.VarLabel(v);
      }
    }
  }
}

struct Case {
  ExampleKind kind;
  int places;
  Mode mode;
};

class TrainingGraphTest : public ::testing::TestWithParam<Case> {};

TEST_P(TrainingGraphTest, CountsCollectivesVersionsAndRaces) {
  const Case c = GetParam();
  ExampleProgram ex = TrainingProgram(c.kind, OptimizerKind::kMomentum);
  BuildStrategy strategy;
  strategy.reduce = c.mode;
  const int n = c.places;
  StatusOr<SsaGraph> built = BuildMultiDeviceGraph(
      ex.main, CpuPlaces(n), ex.loss, strategy, {ex.loss});
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  const SsaGraph& g = *built;
  const Block& block = ex.main.global_block();
  const int params = static_cast<int>(ex.params.size());
  ASSERT_EQ(static_cast<int>(g.grads.size()), params);

  // Op counts per kind, from the program's roles.
  int replicated = 0, owner_only = 0;
  for (int i = 0; i < block.num_ops(); ++i) {
    const OpDesc& op = block.op(i);
    if (OpRole(op) == (kOpRoleBackward | kOpRoleLoss)) continue;
    if (c.mode == Mode::kReduce && IsOptimizerWithParam(op)) {
      ++owner_only;
    } else {
      ++replicated;
    }
  }
  // Reduce mode on shared CPU parameters runs the optimizer of a parameter
  // of at least slice_optimizer_min_numel elements as one slice per place
  // too (graph/ssa/optimizer_slices.h); one place has nothing to share.
  int sliced = 0;
  if (c.mode == Mode::kReduce && n > 1) {
    for (const GradInfo& info : g.grads) {
      sliced += info.numel >= strategy.slice_optimizer_min_numel ? 1 : 0;
    }
  }
  if (c.kind != ExampleKind::kDigitsMlp) {
    EXPECT_EQ(sliced > 0, c.mode == Mode::kReduce && n > 1);  // fc_0.w_0
  }
  EXPECT_EQ(CountOps(g, SsaOpKind::kComputation),
            n * replicated + owner_only + n * sliced);
  EXPECT_EQ(CountOps(g, SsaOpKind::kScaleLossGrad), n);
  EXPECT_EQ(CountOps(g, SsaOpKind::kFetch), 1);
  EXPECT_EQ(CountOps(g, SsaOpKind::kAllReduce),
            c.mode == Mode::kAllReduce ? params : 0);
  EXPECT_EQ(CountOps(g, SsaOpKind::kReduce),
            c.mode == Mode::kReduce ? params : 0);
  // CPU places share parameters in Reduce mode: no broadcast.
  EXPECT_EQ(CountOps(g, SsaOpKind::kBroadcast), 0);
  EXPECT_EQ(CountComputation(g, "momentum"),
            c.mode == Mode::kReduce ? params + n * sliced : n * params);
  for (const SsaOp& op : g.ops()) {
    if (op.kind == SsaOpKind::kScaleLossGrad) {
      EXPECT_DOUBLE_EQ(op.scale, 1.0 / n);
    }
  }

  ExpectGradientsMerged(g);

  // Versions: a parameter is an input (version 0) updated once by its
  // optimizer; its gradient is produced once and merged once.
  for (const ParamGrad& pg : ex.params) {
    for (int p = 0; p < n; ++p) {
      SCOPED_TRACE(pg.param + " on place " + std::to_string(p));
      const std::vector<int>& w = g.Versions(pg.param, p);
      ASSERT_FALSE(w.empty());
      EXPECT_EQ(g.var(w[0]).generator, -1);
      const GradInfo& info =
          *std::find_if(g.grads.begin(), g.grads.end(),
                        [&](const GradInfo& gi) { return gi.grad == pg.grad; });
      const bool updated_here = c.mode == Mode::kAllReduce || info.owner == p;
      ASSERT_EQ(w.size(), updated_here ? 2u : 1u);
      if (updated_here) {
        EXPECT_EQ(g.op(g.var(w[1]).generator).type, "momentum");
      }
      const std::vector<int>& grad = g.Versions(pg.grad, p);
      const bool merged_here = c.mode == Mode::kAllReduce || info.owner == p;
      ASSERT_EQ(grad.size(), merged_here ? 2u : 1u);
      EXPECT_EQ(g.var(grad[0]).version, 0);
      EXPECT_EQ(g.op(g.var(grad[0]).generator).program_op, info.program_op);
      if (merged_here) {
        EXPECT_EQ(g.var(grad[1]).generator, info.collective);
      }
    }
  }
  Status races = CheckRaces(g);
  EXPECT_TRUE(races.ok()) << races.ToString();
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (ExampleKind kind : {ExampleKind::kDigitsMlp, ExampleKind::kFashionMlp,
                           ExampleKind::kFashionCnn}) {
    for (int n = 1; n <= 4; ++n) {
      for (Mode mode : {Mode::kAllReduce, Mode::kReduce}) {
        cases.push_back({kind, n, mode});
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Examples, TrainingGraphTest,
                         ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(ExampleName(info.param.kind)) +
                                  "_" + std::to_string(info.param.places) +
                                  "places_" +
                                  ReduceStrategyName(info.param.mode);
                         });

// Acceptance 2: in Reduce mode (GPU places, or CPU without shared
// parameters) every optimizer op runs on exactly one place, its gradient's
// owner, chosen as the least loaded place so far; a broadcast of the
// parameter from the owner follows it.
TEST(MultiDeviceReduceTest, OwnersBalanceAndBroadcastsFollowOptimizers) {
  for (ExampleKind kind :
       {ExampleKind::kFashionMlp, ExampleKind::kFashionCnn}) {
    ExampleProgram ex = TrainingProgram(kind, OptimizerKind::kAdam);
    for (int n = 2; n <= 4; ++n) {
      for (bool cuda : {false, true}) {
        BuildStrategy strategy;
        strategy.reduce = Mode::kReduce;
        strategy.share_cpu_parameters = false;
        StatusOr<SsaGraph> built = BuildMultiDeviceGraph(
            ex.main, cuda ? CudaPlaces(n) : CpuPlaces(n), ex.loss, strategy);
        ASSERT_TRUE(built.ok()) << built.status().ToString();
        const SsaGraph& g = *built;
        StatusOr<SsaReachability> reach = SsaReachability::Create(g);
        ASSERT_TRUE(reach.ok());

        // Owners: the greedy least-accumulated-elements rule, recomputed.
        std::vector<int64_t> load(n, 0);
        for (const GradInfo& info : g.grads) {
          const int expect = static_cast<int>(
              std::min_element(load.begin(), load.end()) - load.begin());
          EXPECT_EQ(info.owner, expect) << info.grad;
          load[expect] += info.numel;
        }
        EXPECT_EQ(OwnedElements(g), load);

        const Block& block = g.program().global_block();
        for (const GradInfo& info : g.grads) {
          SCOPED_TRACE(info.param);
          std::vector<int> optimizers;
          for (const SsaOp& op : g.ops()) {
            if (op.kind == SsaOpKind::kComputation &&
                IsOptimizerWithParam(block.op(op.program_op))) {
              if (OpRoleVar(block.op(op.program_op))[0] == info.param) {
                optimizers.push_back(op.id);
              }
            }
          }
          ASSERT_EQ(optimizers.size(), 1u);
          EXPECT_EQ(g.op(optimizers[0]).place, info.owner);
          int broadcasts = 0;
          for (const SsaOp& op : g.ops()) {
            if (op.kind != SsaOpKind::kBroadcast ||
                op.var_names != std::vector<std::string>{info.param}) {
              continue;
            }
            ++broadcasts;
            EXPECT_EQ(op.root, info.owner);
            EXPECT_TRUE(reach->Reaches(optimizers[0], op.id));
            for (int p = 0; p < n; ++p) {
              EXPECT_EQ(g.var(g.Latest(info.param, p)).generator, op.id);
            }
          }
          EXPECT_EQ(broadcasts, 1);
        }
        ExpectGradientsMerged(g);
        Status races = CheckRaces(g);
        EXPECT_TRUE(races.ok()) << races.ToString();
        const std::vector<int64_t> owned = OwnedElements(g);
        const int64_t max = *std::max_element(owned.begin(), owned.end());
        const int64_t min = *std::min_element(owned.begin(), owned.end());
        std::cout << "[ balance  ] " << ExampleName(kind) << " on " << n
                  << (cuda ? " cuda" : " cpu") << " places: owned elements";
        for (int64_t e : owned) std::cout << " " << e;
        std::cout << ", max/min " << (min > 0 ? double(max) / min : 0.0)
                  << "\n";
      }
    }
  }
}

// Acceptance 3: every dense gradient in exactly one bucket, in production
// order, every bucket within the limit unless it holds a single gradient.
TEST(MultiDeviceFuseTest, BucketsCoverEveryGradientWithinTheLimit) {
  for (ExampleKind kind :
       {ExampleKind::kFashionMlp, ExampleKind::kFashionCnn}) {
    ExampleProgram ex = TrainingProgram(kind);
    for (int64_t limit : {int64_t{1} << 10, int64_t{64} << 10, int64_t{1} << 20,
                          int64_t{25} << 20}) {
      BuildStrategy strategy;
      strategy.fuse_all_reduce_ops = true;
      strategy.fuse_bucket_bytes = limit;
      StatusOr<SsaGraph> built =
          BuildMultiDeviceGraph(ex.main, CpuPlaces(3), ex.loss, strategy);
      ASSERT_TRUE(built.ok()) << built.status().ToString();
      const SsaGraph& g = *built;
      EXPECT_EQ(CountOps(g, SsaOpKind::kAllReduce), 0);
      EXPECT_EQ(CountOps(g, SsaOpKind::kFusedAllReduce),
                static_cast<int>(g.buckets.size()));
      std::vector<std::string> order;
      for (const GradBucket& b : g.buckets) {
        int64_t bytes = 0;
        for (const std::string& name : b.grads) {
          order.push_back(name);
          for (const GradInfo& info : g.grads) {
            if (info.grad == name) bytes += info.bytes;
          }
        }
        EXPECT_EQ(bytes, b.bytes);
        if (b.grads.size() > 1) {
          EXPECT_LE(b.bytes, limit);
        }
        EXPECT_EQ(g.op(b.op).var_names, b.grads);
      }
      std::vector<std::string> produced;
      for (const GradInfo& info : g.grads) produced.push_back(info.grad);
      EXPECT_EQ(order, produced) << "limit " << limit;
      ExpectGradientsMerged(g);
      Status races = CheckRaces(g);
      EXPECT_TRUE(races.ok()) << races.ToString();
      std::cout << "[ buckets  ] " << ExampleName(kind) << ", limit " << limit
                << " B: " << g.buckets.size() << " buckets for "
                << g.grads.size() << " gradients\n";
    }
  }
}

TEST(MultiDeviceScaleTest, GradientScaleStrategies) {
  ExampleProgram ex = TrainingProgram(ExampleKind::kFitALine);
  using Scale = BuildStrategy::GradientScale;
  for (Scale scale :
       {Scale::kCoeffNumDevice, Scale::kOne, Scale::kCustomized}) {
    BuildStrategy strategy;
    strategy.gradient_scale = scale;
    StatusOr<SsaGraph> g =
        BuildMultiDeviceGraph(ex.main, CpuPlaces(4), ex.loss, strategy);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    const std::string loss_grad = ex.loss + "@GRAD";
    if (scale == Scale::kCustomized) {
      EXPECT_EQ(CountOps(*g, SsaOpKind::kScaleLossGrad), 0);
      for (int p = 0; p < 4; ++p) {
        ASSERT_EQ(g->Versions(loss_grad, p).size(), 1u);
        EXPECT_EQ(g->var(g->Latest(loss_grad, p)).generator, -1);  // fed
      }
      continue;
    }
    ASSERT_EQ(CountOps(*g, SsaOpKind::kScaleLossGrad), 4);
    for (const SsaOp& op : g->ops()) {
      if (op.kind != SsaOpKind::kScaleLossGrad) continue;
      EXPECT_DOUBLE_EQ(op.scale, scale == Scale::kOne ? 1.0 : 0.25);
      ASSERT_EQ(op.outputs.size(), 1u);
      EXPECT_EQ(g->var(op.outputs[0]).name, loss_grad);
      EXPECT_EQ(g->var(op.inputs[0]).name, ex.loss);  // after the loss
      EXPECT_EQ(g->var(op.inputs[0]).place, op.place);
    }
  }
}

// A program with an embedding: its gradient is sparse with is_sparse.
Program EmbeddingProgram(bool is_sparse, std::string* loss) {
  Program main, startup;
  ProgramBuilder b(&main, &startup);
  VarDesc* ids = *layers::Data(b, "ids", {1}, DType::kInt64);
  VarDesc* label = *layers::Data(b, "label", {1}, DType::kInt64);
  VarDesc* emb = *layers::Embedding(b, ids, 100, 8, {}, -1, is_sparse);
  layers::FcOptions fc;
  fc.size = 4;
  VarDesc* logits = *layers::Fc(b, emb, fc);
  VarDesc* cost = *layers::SoftmaxWithCrossEntropy(b, logits, label);
  VarDesc* avg = *layers::Mean(b, cost);
  SGDOptimizer sgd(LearningRate::Constant(0.1));
  EXPECT_TRUE(sgd.Minimize(b, avg).ok());
  *loss = avg->name();
  return main;
}

TEST(MultiDeviceSparseTest, SparseGradientsAreGatheredNotAllReduced) {
  std::string loss;
  Program sparse = EmbeddingProgram(true, &loss);
  StatusOr<SsaGraph> g =
      BuildMultiDeviceGraph(sparse, CpuPlaces(2), loss, BuildStrategy{});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(CountOps(*g, SsaOpKind::kAllGather), 1);
  EXPECT_EQ(CountOps(*g, SsaOpKind::kAllReduce), 2);  // fc weight and bias
  for (const GradInfo& info : g->grads) {
    EXPECT_EQ(info.sparse, g->op(info.collective).kind == SsaOpKind::kAllGather)
        << info.grad;
  }
  ExpectGradientsMerged(*g);
  // Fusion leaves the sparse gradient out of the buckets.
  BuildStrategy fused;
  fused.fuse_all_reduce_ops = true;
  g = BuildMultiDeviceGraph(sparse, CpuPlaces(2), loss, fused);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(CountOps(*g, SsaOpKind::kAllGather), 1);
  for (const GradBucket& b : g->buckets) {
    for (const std::string& name : b.grads) {
      EXPECT_THAT(name, ::testing::Not(HasSubstr("embedding")));
    }
  }
  // Reduce mode merges the rows on the owner.
  BuildStrategy reduce;
  reduce.reduce = Mode::kReduce;
  g = BuildMultiDeviceGraph(sparse, CpuPlaces(2), loss, reduce);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(CountOps(*g, SsaOpKind::kReduce), 3);
  // A dense embedding is all-reduced like any other gradient.
  Program dense = EmbeddingProgram(false, &loss);
  g = BuildMultiDeviceGraph(dense, CpuPlaces(2), loss, BuildStrategy{});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(CountOps(*g, SsaOpKind::kAllGather), 0);
  EXPECT_EQ(CountOps(*g, SsaOpKind::kAllReduce), 3);
}

TEST(MultiDeviceSequentialTest, EachPlaceRunsItsOpsInProgramOrder) {
  ExampleProgram ex = TrainingProgram(ExampleKind::kDigitsMlp);
  BuildStrategy strategy;
  strategy.enable_sequential_execution = true;
  StatusOr<SsaGraph> g =
      BuildMultiDeviceGraph(ex.main, CpuPlaces(2), ex.loss, strategy);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  StatusOr<SsaReachability> reach = SsaReachability::Create(*g);
  ASSERT_TRUE(reach.ok());
  for (int p = 0; p < 2; ++p) {
    int last = -1;
    for (const SsaOp& op : g->ops()) {
      if (op.place != p) continue;
      if (last >= 0) {
        EXPECT_TRUE(reach->Reaches(last, op.id)) << g->OpLabel(op.id);
      }
      last = op.id;
    }
  }
  EXPECT_FALSE(testing::ControlVars(*g, ControlReason::kSequential).empty());
}

TEST(MultiDeviceFetchTest, FetchReadsTheNewestVersionOnEveryPlace) {
  ExampleProgram ex = TrainingProgram(ExampleKind::kFitALine);
  const std::string w = ex.params[0].param;
  StatusOr<SsaGraph> g = BuildMultiDeviceGraph(ex.main, CpuPlaces(3), ex.loss,
                                               BuildStrategy{}, {ex.loss, w});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(CountOps(*g, SsaOpKind::kFetch), 2);
  for (const SsaOp& op : g->ops()) {
    if (op.kind != SsaOpKind::kFetch) continue;
    ASSERT_EQ(op.var_names.size(), 1u);
    std::set<int> places;
    for (int v : op.inputs) {
      EXPECT_EQ(v, g->Latest(op.var_names[0], g->var(v).place));
      places.insert(g->var(v).place);
    }
    EXPECT_EQ(places.size(), 3u);
    ASSERT_EQ(op.outputs.size(), 1u);  // its dummy output
    EXPECT_EQ(g->var(op.outputs[0]).control, ControlReason::kNoOutput);
  }
  StatusOr<SsaGraph> bad = BuildMultiDeviceGraph(
      ex.main, CpuPlaces(3), ex.loss, BuildStrategy{}, {"no_such_var"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("no_such_var"));
}

TEST(MultiDeviceDebugTest, DebugGraphvizPathWritesTheBuiltGraph) {
  ExampleProgram ex = TrainingProgram(ExampleKind::kFitALine);
  BuildStrategy strategy;
  strategy.debug_graphviz_path =
      std::string(PAREX_TEST_TMP_DIR) + "/multi_device_debug.dot";
  std::remove(strategy.debug_graphviz_path.c_str());
  StatusOr<SsaGraph> g =
      BuildMultiDeviceGraph(ex.main, CpuPlaces(2), ex.loss, strategy);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  std::ifstream in(strategy.debug_graphviz_path);
  ASSERT_TRUE(in.good()) << strategy.debug_graphviz_path;
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("digraph"));
  EXPECT_THAT(text.str(), HasSubstr("all_reduce"));
  // An unwritable path fails the build with the path named.
  strategy.debug_graphviz_path = "/nonexistent_dir/x.dot";
  g = BuildMultiDeviceGraph(ex.main, CpuPlaces(2), ex.loss, strategy);
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("/nonexistent_dir/x.dot"));
}

// Paddle's saved inference programs (feed and fetch ops included) build on
// two places: feed ops vanish (their outputs are graph inputs), fetch ops
// become fetch handles, everything else is replicated.
TEST(MultiDevicePaddleModelsTest, InferenceProgramsBuildOnTwoPlaces) {
  PAREX_REQUIRE_PADDLE_MODELS();
  const std::string dir = testing::PaddleModelsDir();
  for (const std::string& file :
       {dir + "/fit_a_line/__model__", dir + "/mnist_mlp/__model__",
        dir + "/simple_model/model.pdmodel"}) {
    SCOPED_TRACE(file);
    StatusOr<Program> program = Program::Load(file);
    ASSERT_TRUE(program.ok()) << program.status().ToString();
    int feeds = 0, fetches = 0, others = 0;
    const Block& block = program->global_block();
    for (int i = 0; i < block.num_ops(); ++i) {
      const std::string& type = block.op(i).type();
      feeds += type == "feed";
      fetches += type == "fetch";
      others += type != "feed" && type != "fetch";
    }
    StatusOr<SsaGraph> g =
        BuildMultiDeviceGraph(*program, CpuPlaces(2), "", BuildStrategy{});
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_EQ(CountOps(*g, SsaOpKind::kComputation), 2 * others);
    EXPECT_EQ(CountOps(*g, SsaOpKind::kFetch), fetches);
    EXPECT_GT(feeds, 0);  // the saved programs read their inputs by feed ops,
    EXPECT_EQ(CountComputation(*g, "feed"), 0);  // which the graph drops
    EXPECT_TRUE(g->grads.empty());
    Status races = CheckRaces(*g);
    EXPECT_TRUE(races.ok()) << races.ToString();
  }
}

}  // namespace
}  // namespace parex
