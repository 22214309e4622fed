// Data hazards and the race checker (issue 4, acceptance 1): every built
// graph is race-free, and removing any single hazard edge (a control var of
// reason write-after-read, write-after-write or read-after-write) makes the
// checker report a race on the var that edge protected.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <set>

#include "graph/builder/backward.h"
#include "graph/ssa/multi_device_builder.h"
#include "tests/graph/ssa/ssa_test_util.h"

namespace parex {
namespace {

using testing::ControlVars;
using testing::CpuPlaces;
using testing::CudaPlaces;
using ::testing::HasSubstr;
using testing::TrainingProgram;
using Mode = BuildStrategy::ReduceStrategy;

std::vector<int> HazardEdges(const SsaGraph& g) {
  std::vector<int> all;
  for (ControlReason r :
       {ControlReason::kWriteAfterRead, ControlReason::kWriteAfterWrite,
        ControlReason::kReadAfterWrite}) {
    for (int v : ControlVars(g, r)) all.push_back(v);
  }
  return all;
}

// The var names whose accesses a hazard edge orders: what its source op and
// its destination op both touch.
std::set<std::string> ProtectedNames(const SsaGraph& g, int control) {
  auto names = [&](int op) {
    std::set<std::string> s;
    for (int v : g.op(op).inputs) {
      if (!g.var(v).is_control()) s.insert(g.var(v).name);
    }
    for (int v : g.op(op).outputs) {
      if (!g.var(v).is_control()) s.insert(g.var(v).name);
    }
    return s;
  };
  const SsaVar& v = g.var(control);
  std::set<std::string> a = names(v.generator), b = names(v.readers[0]), both;
  for (const std::string& n : a) {
    if (b.count(n)) both.insert(n);
  }
  return both;
}

// Removes each hazard edge of `g` in turn: CheckRaces must then fail naming
// a var the edge protected. Returns how many edges were tried.
int ExpectEveryHazardEdgeNecessary(const SsaGraph& g) {
  const std::vector<int> edges = HazardEdges(g);
  for (int e : edges) {
    SsaGraph copy = g;
    const std::string what = g.VarLabel(e) + " from " +
                             g.OpLabel(g.var(e).generator) + " to " +
                             g.OpLabel(g.var(e).readers[0]);
    copy.RemoveControlVar(e);
    Status races = CheckRaces(copy);
    EXPECT_FALSE(races.ok()) << "no race without " << what;
    bool named = false;
    for (const std::string& n : ProtectedNames(g, e)) {
      named = named || races.message().find("'" + n + "'") != std::string::npos;
    }
    EXPECT_TRUE(named) << races.message() << "\n  removed " << what;
  }
  return static_cast<int>(edges.size());
}

OpDesc* Append(Block& block, const std::string& type,
               const std::map<std::string, std::string>& in,
               const std::map<std::string, std::string>& out) {
  OpDesc* op = block.AppendOp(type);
  for (const auto& [slot, var] : in) op->SetInput(slot, {var});
  for (const auto& [slot, var] : out) op->SetOutput(slot, {var});
  return op;
}

TEST(HazardTest, WriteAfterReadIsOrderedAndNecessary) {
  Program p;
  Block& b = p.global_block();
  for (const char* v : {"x", "y", "z"}) b.Var(v)->SetDType(DType::kFP32);
  Append(b, "relu", {{"X", "x"}}, {{"Out", "y"}});
  Append(b, "fill_constant", {}, {{"Out", "x"}});  // overwrites x
  Append(b, "relu", {{"X", "x"}}, {{"Out", "z"}});
  for (int n : {1, 2}) {
    StatusOr<SsaGraph> g =
        BuildMultiDeviceGraph(p, CpuPlaces(n), "", BuildStrategy{});
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    const std::vector<int> war =
        ControlVars(*g, ControlReason::kWriteAfterRead);
    ASSERT_EQ(war.size(), static_cast<size_t>(n));  // one per place
    for (int v : war) {
      EXPECT_EQ(g->op(g->var(v).generator).type, "relu");
      EXPECT_EQ(g->op(g->var(v).readers[0]).type, "fill_constant");
    }
    EXPECT_TRUE(CheckRaces(*g).ok());
    EXPECT_EQ(ExpectEveryHazardEdgeNecessary(*g), n);
    // The second relu reads the new version.
    for (int place = 0; place < n; ++place) {
      EXPECT_EQ(g->Versions("x", place).size(), 2u);
    }
  }
}

TEST(HazardTest, WriteAfterWriteWithoutReadersIsOrdered) {
  Program p;
  Block& b = p.global_block();
  for (const char* v : {"t", "u"}) b.Var(v)->SetDType(DType::kFP32);
  Append(b, "fill_constant", {}, {{"Out", "t"}});
  Append(b, "fill_constant", {}, {{"Out", "t"}});
  Append(b, "relu", {{"X", "t"}}, {{"Out", "u"}});
  StatusOr<SsaGraph> g =
      BuildMultiDeviceGraph(p, CpuPlaces(1), "", BuildStrategy{});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(ControlVars(*g, ControlReason::kWriteAfterWrite).size(), 1u);
  EXPECT_TRUE(CheckRaces(*g).ok());
  EXPECT_EQ(ExpectEveryHazardEdgeNecessary(*g), 1);
  SsaGraph copy = *g;
  copy.RemoveControlVar(ControlVars(*g, ControlReason::kWriteAfterWrite)[0]);
  Status races = CheckRaces(copy);
  EXPECT_THAT(races.message(), HasSubstr("'t' on cpu:0"));
  EXPECT_THAT(races.message(), HasSubstr("fill_constant"));
  EXPECT_THAT(races.message(), HasSubstr("writes"));
}

TEST(HazardTest, AnOpWithoutOutputsGetsADummyOutput) {
  Program p;
  Block& b = p.global_block();
  b.Var("x")->SetDType(DType::kFP32);
  Append(b, "print", {{"In", "x"}}, {});
  StatusOr<SsaGraph> g =
      BuildMultiDeviceGraph(p, CpuPlaces(2), "", BuildStrategy{});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(ControlVars(*g, ControlReason::kNoOutput).size(), 2u);
  for (const SsaOp& op : g->ops()) EXPECT_EQ(op.outputs.size(), 1u);
}

// The training programs with a parameter read after the optimizer and two
// writes that no data edge orders (the input overwritten in place and the
// first activation refilled, as buffer reuse would do), every parameter
// fetched.
Program WithLateWrites(const ExampleProgram& ex) {
  Program p = ex.main;
  Block& b = p.global_block();
  // A read of an updated parameter on every place (an average kept for
  // evaluation, say): with shared parameters, after the owner's update.
  b.Var("late_copy")->SetDType(DType::kFP32);
  Append(b, "scale", {{"X", ex.params[0].param}}, {{"Out", "late_copy"}});
  Append(b, "scale", {{"X", ex.input}}, {{"Out", ex.input}});
  std::string activation;
  for (int i = 0; i < b.num_ops() && activation.empty(); ++i) {
    if (b.op(i).type() == "mul" || b.op(i).type() == "conv2d") {
      activation = b.op(i).OutputArgumentNames()[0];
    }
  }
  Append(b, "fill_constant", {}, {{"Out", activation}});
  return p;
}

TEST(HazardTest, TrainingGraphsAreRaceFreeAndEveryHazardEdgeIsNecessary) {
  int graphs = 0, edges = 0;
  for (ExampleKind kind : {ExampleKind::kDigitsMlp, ExampleKind::kFashionMlp,
                           ExampleKind::kFashionCnn}) {
    ExampleProgram ex = TrainingProgram(kind, OptimizerKind::kAdam);
    const Program late = WithLateWrites(ex);
    std::vector<std::string> fetches{ex.loss};
    for (const ParamGrad& pg : ex.params) fetches.push_back(pg.param);
    for (int n = 1; n <= 4; ++n) {
      for (int variant = 0; variant < 4; ++variant) {
        BuildStrategy s;
        s.reduce = variant == 0 ? Mode::kAllReduce : Mode::kReduce;
        s.share_cpu_parameters = variant == 1;
        s.fuse_all_reduce_ops = variant == 3;
        if (variant == 3) s.reduce = Mode::kAllReduce;
        std::vector<Place> places = variant == 2 ? CudaPlaces(n) : CpuPlaces(n);
        for (const Program* prog :
             {static_cast<const Program*>(&ex.main), &late}) {
          SCOPED_TRACE(std::string(ExampleName(kind)) +
                       " n=" + std::to_string(n) + " variant " +
                       std::to_string(variant) +
                       (prog == &late ? " late writes" : ""));
          StatusOr<SsaGraph> g =
              BuildMultiDeviceGraph(*prog, places, ex.loss, s, fetches);
          ASSERT_TRUE(g.ok()) << g.status().ToString();
          Status races = CheckRaces(*g);
          EXPECT_TRUE(races.ok()) << races.ToString();
          const int tried = ExpectEveryHazardEdgeNecessary(*g);
          if (prog == &late) {
            EXPECT_GE(tried, n);  // at least the input's, on every place
          }
          if (variant == 1 && n > 1 && prog == &late) {
            // A shared parameter read on every place after its update:
            // read-after-write edges from the owner's optimizer.
            EXPECT_FALSE(
                ControlVars(*g, ControlReason::kReadAfterWrite).empty());
          }
          edges += tried;
          ++graphs;
        }
      }
    }
  }
  std::cout << "[ hazards  ] " << graphs << " graphs race-free; " << edges
            << " hazard edges each shown necessary\n";
}

TEST(RaceCheckerTest, NamesTheStorageAndBothOps) {
  Program p;
  p.global_block().Var("x")->SetDType(DType::kFP32);
  SsaGraph g(std::make_shared<Program>(p), CpuPlaces(2));
  const int a = g.AddOp(SsaOpKind::kComputation, "fill_constant", 1, {1});
  g.WriteVar(a, "x", 1);
  const int b = g.AddOp(SsaOpKind::kComputation, "fill_constant", 1, {1});
  g.WriteVar(b, "x", 1);
  Status races = CheckRaces(g);
  ASSERT_FALSE(races.ok());
  EXPECT_THAT(races.message(), HasSubstr("'x' on cpu:1"));
  EXPECT_THAT(races.message(), HasSubstr("op #0 fill_constant@cpu:1"));
  EXPECT_THAT(races.message(), HasSubstr("op #1 fill_constant@cpu:1"));
  g.AddControlEdge(a, b, ControlReason::kWriteAfterWrite);
  EXPECT_TRUE(CheckRaces(g).ok());
  // The same writes on two places do not race.
  SsaGraph h(std::make_shared<Program>(p), CpuPlaces(2));
  h.WriteVar(h.AddOp(SsaOpKind::kComputation, "fill_constant", 0, {0}), "x", 0);
  h.WriteVar(h.AddOp(SsaOpKind::kComputation, "fill_constant", 1, {1}), "x", 1);
  EXPECT_TRUE(CheckRaces(h).ok());
}

TEST(RaceCheckerTest, ACycleIsAnError) {
  Program p;
  SsaGraph g(std::make_shared<Program>(p), CpuPlaces(1));
  const int a = g.AddOp(SsaOpKind::kComputation, "relu", 0, {0});
  const int b = g.AddOp(SsaOpKind::kComputation, "relu", 0, {0});
  g.AddControlEdge(a, b, ControlReason::kSequential);
  g.AddControlEdge(b, a, ControlReason::kSequential);
  StatusOr<std::vector<int>> order = g.TopologicalOrder();
  ASSERT_FALSE(order.ok());
  EXPECT_THAT(order.status().message(), HasSubstr("cycle"));
  EXPECT_THAT(order.status().message(), HasSubstr("op #0 relu@cpu:0"));
  EXPECT_THAT(order.status().message(), HasSubstr("op #1 relu@cpu:0"));
  EXPECT_FALSE(CheckRaces(g).ok());
}

}  // namespace
}  // namespace parex
