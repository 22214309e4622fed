// Reduce mode's sliced optimizers (graph/ssa/optimizer_slices.h): which
// ops can be sliced, the balanced ranges, and how the slices are wired into
// the example programs' graphs (after the gradient's reduce, before the
// optimizer op, fused with the reduce unless the gradient is read elsewhere).
// That the slices give the unsliced bits is tested on the executor
// (tests/actors/parallel_executor_test.cc, the reduce_sliced cases).
#include "graph/ssa/optimizer_slices.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "graph/builder/examples.h"
#include "graph/builder/optimizer.h"
#include "graph/ssa/multi_device_builder.h"
#include "tests/graph/ssa/ssa_test_util.h"

namespace parex {
namespace {

using testing::CpuPlaces;
using testing::TrainingProgram;
using Mode = BuildStrategy::ReduceStrategy;

// Every slice of a sliced optimizer runs on its own place, reads on the
// owner, follows the merge of the gradient and precedes the optimizer op,
// which runs on the owner after all of them and is the parameter's writer.
void ExpectSlicesWired(const SsaGraph& g, bool all_fused = true) {
  StatusOr<SsaReachability> reach = SsaReachability::Create(g);
  ASSERT_TRUE(reach.ok()) << reach.status().ToString();
  for (const SsaOp& op : g.ops()) {
    if (op.slice < 0) continue;
    SCOPED_TRACE(g.OpLabel(op.id));
    EXPECT_EQ(op.place, op.slice);
    EXPECT_EQ(op.num_slices, g.num_places());
    int finisher = -1;
    for (const SsaOp& f : g.ops()) {
      if (f.program_op == op.program_op && f.slice < 0 &&
          f.kind == SsaOpKind::kComputation) {
        finisher = f.id;
      }
    }
    ASSERT_GE(finisher, 0);
    EXPECT_EQ(g.op(finisher).num_slices, op.num_slices);
    EXPECT_EQ(g.op(finisher).place, op.root);
    EXPECT_TRUE(reach->Reaches(op.id, finisher));
    const std::string grad =
        g.program().global_block().op(op.program_op).FirstInput("Grad");
    const auto it =
        std::find_if(g.grads.begin(), g.grads.end(),
                     [&](const GradInfo& i) { return i.grad == grad; });
    ASSERT_NE(it, g.grads.end());
    EXPECT_EQ(it->owner, op.root);
    EXPECT_TRUE(reach->Reaches(it->collective, op.id));
    for (int v : op.inputs) EXPECT_TRUE(g.var(v).is_control());
    for (int v : op.outputs) EXPECT_TRUE(g.var(v).is_control());
    // Only the loss is fetched, so each slice also sums its range of the
    // gradient (the reduce only prepares the sum).
    if (all_fused || op.sliced_reduce >= 0) {
      EXPECT_EQ(op.sliced_reduce, it->collective);
      EXPECT_EQ(g.op(it->collective).num_slices, op.num_slices);
    } else {
      EXPECT_EQ(g.op(it->collective).num_slices, 0);
    }
  }
}

TEST(OptimizerSlicesTest, AFetchedGradientIsReducedWholeBeforeTheSlices) {
  // Someone else reads the reduced gradient: it must be whole when read, so
  // the reduce runs whole and the slices only update.
  ExampleProgram ex =
      TrainingProgram(ExampleKind::kFashionMlp, OptimizerKind::kMomentum);
  BuildStrategy strategy;
  strategy.reduce = Mode::kReduce;
  StatusOr<SsaGraph> g = BuildMultiDeviceGraph(
      ex.main, CpuPlaces(2), ex.loss, strategy, {ex.loss, "fc_0.w_0@GRAD"});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  int slices = 0;
  for (const SsaOp& op : g->ops()) {
    const std::string grad =
        op.program_op >= 0
            ? g->program().global_block().op(op.program_op).FirstInput("Grad")
            : "";
    if (op.slice < 0) continue;
    ++slices;
    EXPECT_EQ(op.sliced_reduce >= 0, grad != "fc_0.w_0@GRAD")
        << g->OpLabel(op.id);
  }
  EXPECT_GT(slices, 0);
  ExpectSlicesWired(*g, false);
}

TEST(OptimizerSlicesTest, OnlyInPlaceElementwiseUpdatesAreSliced) {
  Program program;
  Block& block = program.global_block();
  auto adam = [&block](const std::string& param_out) {
    OpDesc* op = block.AppendOp("adam");
    for (const char* slot : {"Param", "Grad", "Moment1", "Moment2",
                             "LearningRate", "Beta1Pow", "Beta2Pow"}) {
      op->SetInput(slot, {std::string("v_") + slot});
    }
    op->SetOutput("ParamOut", {param_out});
    op->SetOutput("Moment1Out", {"v_Moment1"});
    op->SetOutput("Moment2Out", {"v_Moment2"});
    op->SetOutput("Beta1PowOut", {"v_Beta1Pow"});
    op->SetOutput("Beta2PowOut", {"v_Beta2Pow"});
    return op;
  };
  EXPECT_TRUE(CanSliceOptimizer(*adam("v_Param")));
  // ParamOut elsewhere: a slice would write a tensor it does not view.
  EXPECT_FALSE(CanSliceOptimizer(*adam("v_other")));
  OpDesc* master = adam("v_Param");
  master->SetInput("MasterParam", {"v_master"});  // not elementwise-known
  EXPECT_FALSE(CanSliceOptimizer(*master));
  OpDesc* no_grad = adam("v_Param");
  no_grad->SetInput("Grad", {});
  EXPECT_FALSE(CanSliceOptimizer(*no_grad));
  EXPECT_FALSE(CanSliceOptimizer(*block.AppendOp("lamb")));
  int64_t begin = 0, end = 0, covered = 0;
  for (int k = 0; k < 3; ++k) {
    SliceRange(10, k, 3, &begin, &end);
    EXPECT_EQ(begin, covered);
    EXPECT_GE(end - begin, 3);
    covered = end;
  }
  EXPECT_EQ(covered, 10);
}

TEST(OptimizerSlicesTest, ExamplesInReduceModeSliceTheirLargeParameters) {
  for (ExampleKind kind :
       {ExampleKind::kFashionMlp, ExampleKind::kFashionCnn}) {
    for (int n : {2, 3, 4}) {
      SCOPED_TRACE(std::to_string(n) + " places");
      ExampleProgram ex = TrainingProgram(kind, OptimizerKind::kMomentum);
      BuildStrategy strategy;
      strategy.reduce = Mode::kReduce;
      StatusOr<SsaGraph> g = BuildMultiDeviceGraph(
          ex.main, CpuPlaces(n), ex.loss, strategy, {ex.loss});
      ASSERT_TRUE(g.ok()) << g.status().ToString();
      int slices = 0;
      for (const SsaOp& op : g->ops()) slices += op.slice >= 0 ? 1 : 0;
      EXPECT_GT(slices, 0);
      EXPECT_EQ(slices % n, 0);
      ExpectSlicesWired(*g);
      // Sequential execution and a zero threshold slice nothing.
      for (int variant = 0; variant < 2; ++variant) {
        BuildStrategy none = strategy;
        if (variant == 0) none.enable_sequential_execution = true;
        if (variant == 1) none.slice_optimizer_min_numel = 0;
        StatusOr<SsaGraph> plain = BuildMultiDeviceGraph(
            ex.main, CpuPlaces(n), ex.loss, none, {ex.loss});
        ASSERT_TRUE(plain.ok()) << plain.status().ToString();
        for (const SsaOp& op : plain->ops()) {
          EXPECT_EQ(op.slice, -1);
          EXPECT_EQ(op.num_slices, 0);
        }
      }
    }
  }
}

}  // namespace
}  // namespace parex
