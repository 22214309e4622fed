#include "graph/ssa/memory_plan.h"

#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "graph/ssa/multi_device_builder.h"
#include "tests/graph/ssa/ssa_test_util.h"

namespace parex {
namespace {

using testing::CpuPlaces;

// fp32 [-1, 4]: 64 * 4 * 4 = 1024 bytes at batch 64.
constexpr int64_t kBatch = 64;
constexpr int64_t kVarBytes = kBatch * 4 * 4;

// Block 0 declaring `names` as fp32 [-1, 4] tensors.
std::shared_ptr<Program> MakeProgram(const std::vector<std::string>& names) {
  auto program = std::make_shared<Program>();
  for (const std::string& name : names) {
    VarDesc* v = program->global_block().Var(name);
    v->SetDType(DType::kFP32);
    v->SetDims({-1, 4});
  }
  return program;
}

// An op on place 0 reading `inputs` (newest versions) and writing `outputs`.
int Op(SsaGraph* g, const std::vector<std::string>& inputs,
       const std::vector<std::string>& outputs) {
  const int op = g->AddOp(SsaOpKind::kComputation, "relu", 0, {0});
  for (const std::string& in : inputs) g->AddInput(op, g->ReadVar(in, 0));
  for (const std::string& out : outputs) g->WriteVar(op, out, 0);
  return op;
}

bool Planned(const SsaGraph& g, const std::string& name, int place = 0) {
  const auto& of = g.memory_plan.buffer_of;
  return place < static_cast<int>(of.size()) && of[place].count(name) > 0;
}

int BufferOf(const SsaGraph& g, const std::string& name, int place = 0) {
  return g.memory_plan.buffer_of[place].at(name);
}

// x (feed) -> a -> b -> c -> d: a's buffer is free once b is written.
SsaGraph Chain(std::shared_ptr<Program> program) {
  SsaGraph g(std::move(program), CpuPlaces(1));
  Op(&g, {"x"}, {"a"});
  Op(&g, {"a"}, {"b"});
  Op(&g, {"b"}, {"c"});
  Op(&g, {"c"}, {"d"});
  return g;
}

TEST(MemoryPlanSmall, ChainReusesEveryOtherBuffer) {
  SsaGraph g = Chain(MakeProgram({"x", "a", "b", "c", "d"}));
  ASSERT_TRUE(PlanMemory(&g, kBatch).ok());
  const MemoryPlan& plan = g.memory_plan;
  EXPECT_EQ(plan.batch_per_place, kBatch);
  EXPECT_FALSE(Planned(g, "x"));  // a feed
  EXPECT_EQ(BufferOf(g, "a"), BufferOf(g, "c"));
  EXPECT_EQ(BufferOf(g, "b"), BufferOf(g, "d"));
  EXPECT_NE(BufferOf(g, "a"),
            BufferOf(g, "b"));  // b is written while a is read
  ASSERT_EQ(plan.buffer_bytes.size(), 2u);
  EXPECT_EQ(plan.buffer_bytes, (std::vector<int64_t>{kVarBytes, kVarBytes}));
  EXPECT_EQ(plan.buffer_place, (std::vector<int>{0, 0}));
  EXPECT_EQ(plan.bytes_without_reuse, 4 * kVarBytes);
  EXPECT_EQ(plan.bytes_with_reuse, 2 * kVarBytes);
  EXPECT_TRUE(CheckMemoryPlan(g).ok()) << CheckMemoryPlan(g).ToString();
}

TEST(MemoryPlanSmall, BestFitPicksTheSmallestBufferThatHolds) {
  auto program = MakeProgram({"x", "big", "small", "y", "z"});
  program->global_block().FindVar("big")->SetDims({-1, 64});
  program->global_block().FindVar("small")->SetDims({-1, 2});
  program->global_block().FindVar("y")->SetDims({-1, 2});
  SsaGraph g(program, CpuPlaces(1));
  Op(&g, {"x"}, {"big"});
  Op(&g, {"x"}, {"small"});
  Op(&g, {"big", "small"}, {"y"});
  Op(&g, {"y"}, {"z"});
  ASSERT_TRUE(PlanMemory(&g, kBatch).ok());
  // y may go in neither (both die at its writer); z ([-1,4]) goes in the
  // smallest free buffer that holds it: big's, since small's holds [-1,2].
  EXPECT_NE(BufferOf(g, "y"), BufferOf(g, "big"));
  EXPECT_NE(BufferOf(g, "y"), BufferOf(g, "small"));
  EXPECT_EQ(BufferOf(g, "z"), BufferOf(g, "big"));
  EXPECT_EQ(g.memory_plan.buffer_bytes[BufferOf(g, "big")], kBatch * 64 * 4);
  EXPECT_TRUE(CheckMemoryPlan(g).ok()) << CheckMemoryPlan(g).ToString();
}

TEST(MemoryPlanSmall, GrowsTheLargestFreeBufferWhenNoneHolds) {
  auto program = MakeProgram({"x", "a", "b", "c"});
  program->global_block().FindVar("a")->SetDims({-1, 2});
  program->global_block().FindVar("c")->SetDims({-1, 8});
  SsaGraph g(program, CpuPlaces(1));
  Op(&g, {"x"}, {"a"});
  Op(&g, {"a"}, {"b"});
  Op(&g, {"b"}, {"c"});
  ASSERT_TRUE(PlanMemory(&g, kBatch).ok());
  EXPECT_EQ(BufferOf(g, "c"), BufferOf(g, "a"));
  EXPECT_EQ(g.memory_plan.buffer_bytes[BufferOf(g, "c")], kBatch * 8 * 4);
  EXPECT_EQ(g.memory_plan.bytes_with_reuse, kBatch * 8 * 4 + kVarBytes);
  EXPECT_TRUE(CheckMemoryPlan(g).ok()) << CheckMemoryPlan(g).ToString();
}

// x -> a and x -> b in parallel, c = f(a, b), d = g(c).
SsaGraph Branches(std::shared_ptr<Program> program) {
  SsaGraph g(std::move(program), CpuPlaces(1));
  Op(&g, {"x"}, {"a"});
  Op(&g, {"x"}, {"b"});
  Op(&g, {"a", "b"}, {"c"});
  Op(&g, {"c"}, {"d"});
  return g;
}

TEST(MemoryPlanSmall, ParallelBranchesDoNotShare) {
  SsaGraph g = Branches(MakeProgram({"x", "a", "b", "c", "d"}));
  ASSERT_TRUE(PlanMemory(&g, kBatch).ok());
  EXPECT_NE(BufferOf(g, "a"), BufferOf(g, "b"));
  // c is written by the op that last reads a and b: no in-place reuse.
  EXPECT_NE(BufferOf(g, "c"), BufferOf(g, "a"));
  EXPECT_NE(BufferOf(g, "c"), BufferOf(g, "b"));
  // d is written after a and b are dead.
  EXPECT_TRUE(BufferOf(g, "d") == BufferOf(g, "a") ||
              BufferOf(g, "d") == BufferOf(g, "b"));
  EXPECT_EQ(g.memory_plan.bytes_with_reuse, 3 * kVarBytes);
  EXPECT_EQ(g.memory_plan.bytes_without_reuse, 4 * kVarBytes);
  EXPECT_TRUE(CheckMemoryPlan(g).ok()) << CheckMemoryPlan(g).ToString();
}

TEST(MemoryPlanSmall, FetchTargetsAreNeverPlanned) {
  SsaGraph g = Chain(MakeProgram({"x", "a", "b", "c", "d"}));
  const int fetch = g.AddOp(SsaOpKind::kFetch, "fetch", -1, {0});
  g.AddInput(fetch, g.ReadVar("d", 0));
  g.AddInput(fetch, g.Versions("a", 0).front());
  ASSERT_TRUE(PlanMemory(&g, kBatch).ok());
  EXPECT_FALSE(Planned(g, "d"));
  EXPECT_FALSE(Planned(g, "a"));
  EXPECT_TRUE(Planned(g, "b"));
  EXPECT_TRUE(Planned(g, "c"));
  EXPECT_TRUE(CheckMemoryPlan(g).ok()) << CheckMemoryPlan(g).ToString();
}

TEST(MemoryPlanSmall, PersistablesSharedAndUntypedVarsAreNeverPlanned) {
  auto program = MakeProgram({"x", "a", "b", "c", "d"});
  program->global_block().FindVar("b")->SetPersistable(true);
  program->global_block().Var("c")->SetType(proto::VarType::SELECTED_ROWS);
  program->global_block().Var("untyped");  // no dtype, no dims
  SsaGraph g = Chain(program);
  Op(&g, {"d"}, {"untyped", "undeclared"});
  Op(&g, {"untyped"}, {"w"});
  program->global_block().Var("w")->SetDType(DType::kFP32);
  program->global_block().Var("w")->SetDims({4, 4});
  g.shared_parameters = true;
  g.grads.push_back(GradInfo{"w", "w@GRAD"});
  ASSERT_TRUE(PlanMemory(&g, kBatch).ok());
  EXPECT_TRUE(Planned(g, "a"));
  EXPECT_TRUE(Planned(g, "d"));
  for (const char* name : {"x", "b", "c", "untyped", "undeclared", "w"}) {
    EXPECT_FALSE(Planned(g, name)) << name;
  }
  EXPECT_EQ(g.memory_plan.bytes_without_reuse, 2 * kVarBytes);
  EXPECT_TRUE(CheckMemoryPlan(g).ok()) << CheckMemoryPlan(g).ToString();
}

TEST(MemoryPlanSmall, ZeroExtentVarsAreLeftToTheRuntime) {
  // batch_norm's ReserveSpace is declared [0]: its size is the kernel's.
  auto program = MakeProgram({"x", "a", "b", "c", "d"});
  program->global_block().FindVar("b")->SetDims({0});
  SsaGraph g = Chain(program);
  ASSERT_TRUE(PlanMemory(&g, kBatch).ok());
  EXPECT_FALSE(Planned(g, "b"));
  EXPECT_TRUE(Planned(g, "c"));
  EXPECT_TRUE(CheckMemoryPlan(g).ok()) << CheckMemoryPlan(g).ToString();
}

TEST(MemoryPlanSmall, ThousandsOfOps) {
  // Per place a chain t_i = f(t_{i-1}, t_{i-3}) of 1500 ops: 3000 ops.
  constexpr int kLength = 1500;
  std::vector<std::string> names{"x"};
  for (int i = 0; i < kLength; ++i) names.push_back("t" + std::to_string(i));
  SsaGraph g(MakeProgram(names), CpuPlaces(2));
  for (int p = 0; p < 2; ++p) {
    for (int i = 0; i < kLength; ++i) {
      const int op = g.AddOp(SsaOpKind::kComputation, "sum", p, {p});
      g.AddInput(op, g.ReadVar(names[i], p));
      if (i >= 3) g.AddInput(op, g.ReadVar(names[i - 2], p));
      g.WriteVar(op, names[i + 1], p);
    }
  }
  ASSERT_TRUE(PlanMemory(&g, kBatch).ok());
  // t_i is live from its writer to the reader of t_{i+2}: four at a time.
  EXPECT_EQ(g.memory_plan.buffer_bytes.size(), 8u);
  EXPECT_EQ(g.memory_plan.bytes_without_reuse, 2 * kLength * kVarBytes);
  EXPECT_TRUE(CheckMemoryPlan(g).ok()) << CheckMemoryPlan(g).ToString();
}

TEST(MemoryPlanSmall, EveryVersionOfAStorageIsLive) {
  // a is written twice (a@0 by op0, a@1 by op3); b lives between the two.
  // Every access pair is ordered, yet the lifetimes interleave.
  SsaGraph g(MakeProgram({"x", "a", "b", "y", "z"}), CpuPlaces(1));
  const int op0 = Op(&g, {"x"}, {"a"});
  const int op1 = Op(&g, {"x"}, {"b"});
  g.AddControlEdge(op0, op1, ControlReason::kSequential);
  Op(&g, {"b"}, {"y"});
  Op(&g, {"y"}, {"a"});
  Op(&g, {"a"}, {"z"});
  ASSERT_TRUE(PlanMemory(&g, kBatch).ok());
  EXPECT_NE(BufferOf(g, "a"), BufferOf(g, "b"));
  EXPECT_TRUE(CheckMemoryPlan(g).ok()) << CheckMemoryPlan(g).ToString();

  g.memory_plan.buffer_of[0]["b"] = BufferOf(g, "a");
  const Status s = CheckMemoryPlan(g);
  ASSERT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("'a'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'b'"), std::string::npos) << s.message();
}

TEST(MemoryPlanSmall, PlansEachPlaceSeparately) {
  SsaGraph g(MakeProgram({"x", "a", "b", "c"}), CpuPlaces(2));
  for (int p = 0; p < 2; ++p) {
    std::string prev = "x";
    for (const char* out : {"a", "b", "c"}) {
      const int op = g.AddOp(SsaOpKind::kComputation, "relu", p, {p});
      g.AddInput(op, g.ReadVar(prev, p));
      g.WriteVar(op, out, p);
      prev = out;
    }
  }
  ASSERT_TRUE(PlanMemory(&g, kBatch).ok());
  const MemoryPlan& plan = g.memory_plan;
  ASSERT_EQ(plan.buffer_of.size(), 2u);
  EXPECT_EQ(plan.buffer_bytes.size(), 4u);
  for (int p = 0; p < 2; ++p) {
    EXPECT_EQ(BufferOf(g, "a", p), BufferOf(g, "c", p));
    EXPECT_EQ(plan.buffer_place[BufferOf(g, "a", p)], p);
  }
  EXPECT_EQ(plan.bytes_without_reuse, 6 * kVarBytes);
  EXPECT_EQ(plan.bytes_with_reuse, 4 * kVarBytes);
  EXPECT_TRUE(CheckMemoryPlan(g).ok()) << CheckMemoryPlan(g).ToString();
}

TEST(MemoryPlanSmall, RejectsANonPositiveBatch) {
  SsaGraph g = Chain(MakeProgram({"x", "a", "b", "c", "d"}));
  EXPECT_EQ(PlanMemory(&g, 0).code(), StatusCode::kInvalidArgument);
}

TEST(MemoryPlanCheck, EmptyPlanIsSafe) {
  SsaGraph g = Chain(MakeProgram({"x", "a", "b", "c", "d"}));
  EXPECT_TRUE(CheckMemoryPlan(g).ok());
}

TEST(MemoryPlanCheck, UnorderedStoragesInOneBufferFail) {
  SsaGraph g = Branches(MakeProgram({"x", "a", "b", "c", "d"}));
  ASSERT_TRUE(PlanMemory(&g, kBatch).ok());
  g.memory_plan.buffer_of[0]["b"] = BufferOf(g, "a");
  const Status s = CheckMemoryPlan(g);
  ASSERT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  const std::string& m = s.message();
  EXPECT_NE(m.find("buffer " + std::to_string(BufferOf(g, "a"))),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("'a'"), std::string::npos) << m;
  EXPECT_NE(m.find("'b'"), std::string::npos) << m;
  EXPECT_NE(m.find("cpu:0"), std::string::npos) << m;
  EXPECT_NE(m.find("op #0"), std::string::npos) << m;
  EXPECT_NE(m.find("op #1"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(MemoryPlanCheck, InPlaceReuseFails) {
  SsaGraph g = Chain(MakeProgram({"x", "a", "b", "c", "d"}));
  ASSERT_TRUE(PlanMemory(&g, kBatch).ok());
  g.memory_plan.buffer_of[0]["b"] =
      BufferOf(g, "a");  // op #1 reads a, writes b
  const Status s = CheckMemoryPlan(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("op #1"), std::string::npos) << s.message();
}

TEST(MemoryPlanCheck, TooSmallBufferFails) {
  SsaGraph g = Chain(MakeProgram({"x", "a", "b", "c", "d"}));
  ASSERT_TRUE(PlanMemory(&g, kBatch).ok());
  g.memory_plan.buffer_bytes[BufferOf(g, "c")] -= 1;
  g.memory_plan.bytes_with_reuse -= 1;
  const Status s = CheckMemoryPlan(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("bytes"), std::string::npos) << s.message();
}

TEST(MemoryPlanCheck, ExcludedStoragesFail) {
  auto program = MakeProgram({"x", "a", "b", "c", "d"});
  SsaGraph g = Chain(program);
  const int fetch = g.AddOp(SsaOpKind::kFetch, "fetch", -1, {0});
  g.AddInput(fetch, g.ReadVar("d", 0));
  ASSERT_TRUE(PlanMemory(&g, kBatch).ok());
  const int buffer = BufferOf(g, "a");

  SsaGraph feed = g;
  feed.memory_plan.buffer_of[0]["x"] = buffer;
  EXPECT_NE(CheckMemoryPlan(feed).message().find("feed"), std::string::npos);

  SsaGraph fetched = g;
  fetched.memory_plan.buffer_of[0]["d"] = buffer;
  EXPECT_NE(CheckMemoryPlan(fetched).message().find("fetch"),
            std::string::npos);

  SsaGraph wrong_place = g;
  wrong_place.memory_plan.buffer_place[buffer] = 1;
  EXPECT_FALSE(CheckMemoryPlan(wrong_place).ok());

  program->global_block().FindVar("a")->SetPersistable(true);
  const Status s = CheckMemoryPlan(g);
  EXPECT_NE(s.message().find("persistable"), std::string::npos) << s.ToString();
}

// The acceptance point: planned peak bytes of the training graphs
// with and without reuse, proven safe by the checker.
void PlanTrainingGraph(ExampleKind kind, int num_places) {
  const ExampleProgram prog = testing::TrainingProgram(kind);
  StatusOr<SsaGraph> built = BuildMultiDeviceGraph(
      prog.main, CpuPlaces(num_places), prog.loss, BuildStrategy{});
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  SsaGraph& g = *built;
  ASSERT_TRUE(PlanMemory(&g, kBatch).ok());
  const MemoryPlan& plan = g.memory_plan;
  const std::string tag =
      std::string(ExampleName(kind)) + "_" + std::to_string(num_places) + "p";
  std::cout << "[memory plan] " << tag << ": " << g.ops().size() << " ops, "
            << plan.buffer_bytes.size() << " buffers, bytes without reuse "
            << plan.bytes_without_reuse << ", with reuse "
            << plan.bytes_with_reuse << " (batch " << kBatch << " per place)\n";
  ::testing::Test::RecordProperty(tag + "_bytes_without_reuse",
                                  std::to_string(plan.bytes_without_reuse));
  ::testing::Test::RecordProperty(tag + "_bytes_with_reuse",
                                  std::to_string(plan.bytes_with_reuse));
  EXPECT_GT(plan.bytes_with_reuse, 0);
  EXPECT_LT(plan.bytes_with_reuse, plan.bytes_without_reuse);
  for (int p = 0; p < num_places; ++p) {
    EXPECT_FALSE(plan.buffer_of[p].empty()) << "place " << p;
    for (const ParamGrad& pg : prog.params) {
      EXPECT_EQ(plan.buffer_of[p].count(pg.param), 0u) << pg.param;
    }
    EXPECT_EQ(plan.buffer_of[p].count(prog.input), 0u);
    EXPECT_EQ(plan.buffer_of[p].count(prog.label), 0u);
  }
  const Status check = CheckMemoryPlan(g);
  EXPECT_TRUE(check.ok()) << check.ToString();
}

TEST(MemoryPlanModels, FashionMlpOnePlace) {
  PlanTrainingGraph(ExampleKind::kFashionMlp, 1);
}
TEST(MemoryPlanModels, FashionMlpTwoPlaces) {
  PlanTrainingGraph(ExampleKind::kFashionMlp, 2);
}
TEST(MemoryPlanModels, FashionCnnOnePlace) {
  PlanTrainingGraph(ExampleKind::kFashionCnn, 1);
}
TEST(MemoryPlanModels, FashionCnnTwoPlaces) {
  PlanTrainingGraph(ExampleKind::kFashionCnn, 2);
}

TEST(MemoryPlanModels, FetchTargetsOfATrainingGraphAreNotPlanned) {
  const ExampleProgram prog = testing::TrainingProgram(ExampleKind::kDigitsMlp);
  StatusOr<SsaGraph> built =
      BuildMultiDeviceGraph(prog.main, CpuPlaces(2), prog.loss, BuildStrategy{},
                            {prog.loss, prog.accuracy});
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  ASSERT_TRUE(PlanMemory(&*built, kBatch).ok());
  for (int p = 0; p < 2; ++p) {
    EXPECT_EQ(built->memory_plan.buffer_of[p].count(prog.loss), 0u);
    EXPECT_EQ(built->memory_plan.buffer_of[p].count(prog.accuracy), 0u);
  }
  EXPECT_TRUE(CheckMemoryPlan(*built).ok())
      << CheckMemoryPlan(*built).ToString();
}

TEST(MemoryPlanModels, BuilderPlansWhenMemoryOptimizeIsOn) {
  const ExampleProgram prog =
      testing::TrainingProgram(ExampleKind::kFashionMlp);
  BuildStrategy strategy;
  strategy.memory_optimize = true;
  strategy.memory_plan_batch_per_place = 32;
  StatusOr<SsaGraph> built =
      BuildMultiDeviceGraph(prog.main, CpuPlaces(2), prog.loss, strategy);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  const MemoryPlan& plan = built->memory_plan;
  ASSERT_FALSE(plan.empty());
  EXPECT_EQ(plan.batch_per_place, 32);
  EXPECT_TRUE(CheckMemoryPlan(*built).ok())
      << CheckMemoryPlan(*built).ToString();

  SsaGraph again = *built;
  ASSERT_TRUE(PlanMemory(&again, 32).ok());
  EXPECT_EQ(again.memory_plan.buffer_of, plan.buffer_of);
  EXPECT_EQ(again.memory_plan.bytes_with_reuse, plan.bytes_with_reuse);

  StatusOr<SsaGraph> plain = BuildMultiDeviceGraph(prog.main, CpuPlaces(2),
                                                   prog.loss, BuildStrategy{});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_TRUE(plain->memory_plan.empty());
}

}  // namespace
}  // namespace parex
