// ValidateSsaGraph, the dot and JSON dumps (graph/ssa/ssa_dump.h), over graphs
// built by hand with the SsaGraph API and over the digits MLP training graph.
#include "graph/ssa/ssa_dump.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/ssa/multi_device_builder.h"
#include "graph/ssa/ssa_validate.h"
#include "proto/program_io.h"
#include "tests/graph/ssa/ssa_test_util.h"

namespace parex {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

SsaGraph EmptyGraph(int places) {
  return SsaGraph(std::make_shared<Program>(), testing::CpuPlaces(places));
}

// A small data-parallel step over 2 places, valid by construction:
//   per place p: mul(x, fc_0.w_0) -> y; scale_loss_grad -> y@GRAD;
//                mul_grad(y@GRAD, x) -> fc_0.w_0@GRAD
//   all_reduce(fc_0.w_0@GRAD) over both places
//   per place p: sgd(fc_0.w_0, fc_0.w_0@GRAD) -> fc_0.w_0 (version 1),
//                ordered after mul by a (redundant) write-after-read edge
//   fetch(y) over both places, with a no-output control var to nothing.
struct StepGraph {
  SsaGraph graph = EmptyGraph(2);
  int mul[2] = {-1, -1};
  int sgd[2] = {-1, -1};
  int all_reduce = -1;
  int fetch = -1;
  int removed_control = -1;
};

StepGraph BuildStepGraph() {
  StepGraph s;
  SsaGraph& g = s.graph;
  int grad_op[2];
  for (int p = 0; p < 2; ++p) {
    s.mul[p] = g.AddOp(SsaOpKind::kComputation, "mul", p, {p});
    g.AddInput(s.mul[p], g.ReadVar("x", p));
    g.AddInput(s.mul[p], g.ReadVar("fc_0.w_0", p));
    g.WriteVar(s.mul[p], "y", p);
    const int scale =
        g.AddOp(SsaOpKind::kScaleLossGrad, "scale_loss_grad", p, {p});
    g.mutable_op(scale).scale = 0.5;
    g.WriteVar(scale, "y@GRAD", p);
    grad_op[p] = g.AddOp(SsaOpKind::kComputation, "mul_grad", p, {p});
    g.AddInput(grad_op[p], g.ReadVar("y@GRAD", p));
    g.AddInput(grad_op[p], g.ReadVar("x", p));
    g.WriteVar(grad_op[p], "fc_0.w_0@GRAD", p);
  }
  s.all_reduce = g.AddOp(SsaOpKind::kAllReduce, "all_reduce", -1, {0, 1});
  g.mutable_op(s.all_reduce).var_names = {"fc_0.w_0@GRAD"};
  for (int p = 0; p < 2; ++p) {
    g.AddInput(s.all_reduce, g.ReadVar("fc_0.w_0@GRAD", p));
  }
  for (int p = 0; p < 2; ++p) g.WriteVar(s.all_reduce, "fc_0.w_0@GRAD", p);
  for (int p = 0; p < 2; ++p) {
    s.sgd[p] = g.AddOp(SsaOpKind::kComputation, "sgd", p, {p});
    g.AddInput(s.sgd[p], g.ReadVar("fc_0.w_0", p));
    g.AddInput(s.sgd[p], g.ReadVar("fc_0.w_0@GRAD", p));
    g.WriteVar(s.sgd[p], "fc_0.w_0", p);
    g.AddControlEdge(s.mul[p], s.sgd[p], ControlReason::kWriteAfterRead);
  }
  s.fetch = g.AddOp(SsaOpKind::kFetch, "fetch", -1, {0, 1});
  g.mutable_op(s.fetch).var_names = {"y"};
  for (int p = 0; p < 2; ++p) g.AddInput(s.fetch, g.ReadVar("y", p));
  // A hazard edge a test removed again: skipped by validation and dumps.
  s.removed_control =
      g.AddControlEdge(s.mul[0], s.fetch, ControlReason::kWriteAfterWrite);
  g.RemoveControlVar(s.removed_control);
  return s;
}

std::string TmpPath(const std::string& name) {
  return std::string(PAREX_TEST_TMP_DIR) + "/ssa_dump_" + name;
}

// Renders `dot_text` with Graphviz; fails the test (never skips) when `dot`
// is missing, when it exits non-zero, or when the output is not an SVG.
void ExpectRendersWithGraphviz(const SsaGraph& graph, const std::string& name) {
  ASSERT_EQ(std::system("command -v dot >/dev/null 2>&1"), 0)
      << "Graphviz's `dot` is not on PATH: these tests need graphviz "
         "(scripts/bootstrap installs it)";
  std::filesystem::create_directories(PAREX_TEST_TMP_DIR);
  const std::string in = TmpPath(name + ".dot");
  const std::string out = TmpPath(name + ".svg");
  const std::string err = TmpPath(name + ".err");
  std::filesystem::remove(out);
  const Status written = WriteSsaGraphDot(graph, in);
  ASSERT_TRUE(written.ok()) << written.ToString();
  const std::string command =
      "dot -Tsvg '" + in + "' -o '" + out + "' 2>'" + err + "'";
  const int rc = std::system(command.c_str());
  StatusOr<std::string> errors = ReadFileBytes(err);
  ASSERT_EQ(rc, 0) << command << " failed: "
                   << (errors.ok() ? *errors : errors.status().ToString());
  StatusOr<std::string> svg = ReadFileBytes(out);
  ASSERT_TRUE(svg.ok()) << svg.status().ToString();
  EXPECT_THAT(*svg, HasSubstr("<svg"));
}

// --- validation -------------------------------------------------------------

TEST(SsaValidate, HandBuiltStepGraphPasses) {
  StepGraph s = BuildStepGraph();
  const Status status = ValidateSsaGraph(s.graph);
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(SsaValidate, EmptyGraphPasses) {
  EXPECT_TRUE(ValidateSsaGraph(EmptyGraph(1)).ok());
}

TEST(SsaValidate, CycleNamesItsOps) {
  SsaGraph g = EmptyGraph(1);
  const int a = g.AddOp(SsaOpKind::kComputation, "relu", 0, {0});
  g.AddInput(a, g.ReadVar("x", 0));
  const int y = g.WriteVar(a, "y", 0);
  const int b = g.AddOp(SsaOpKind::kComputation, "scale", 0, {0});
  g.AddInput(b, y);
  g.WriteVar(b, "z", 0);
  g.AddControlEdge(b, a, ControlReason::kWriteAfterRead);
  const Status status = ValidateSsaGraph(g);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("cycle"));
  EXPECT_THAT(status.message(), HasSubstr(g.OpLabel(a)));
  EXPECT_THAT(status.message(), HasSubstr(g.OpLabel(b)));
}

TEST(SsaValidate, ComputationReadingAnotherPlaceNamesOpVarAndPlace) {
  SsaGraph g = EmptyGraph(2);
  const int op = g.AddOp(SsaOpKind::kComputation, "mul", 1, {1});
  g.AddInput(op, g.ReadVar("x", 1));
  const int w = g.ReadVar("fc_0.w_0", 0);
  g.AddInput(op, w);
  g.WriteVar(op, "y", 1);
  const Status status = ValidateSsaGraph(g);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr(g.OpLabel(op)));
  EXPECT_THAT(status.message(), HasSubstr(g.VarLabel(w)));
  EXPECT_THAT(status.message(), HasSubstr("another place"));
  EXPECT_THAT(status.message(), HasSubstr("cpu:1"));
  EXPECT_EQ(status.message().find('\n'), std::string::npos);
}

TEST(SsaValidate, ScaleLossGradWritingAnotherPlace) {
  SsaGraph g = EmptyGraph(2);
  const int op = g.AddOp(SsaOpKind::kScaleLossGrad, "scale_loss_grad", 0, {0});
  const int out = g.WriteVar(op, "loss@GRAD", 1);
  const Status status = ValidateSsaGraph(g);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(),
              HasSubstr(g.OpLabel(op) + " writes " + g.VarLabel(out)));
  EXPECT_THAT(status.message(), HasSubstr("another place"));
}

TEST(SsaValidate, ReduceWritingOffItsRoot) {
  SsaGraph g = EmptyGraph(2);
  const int op = g.AddOp(SsaOpKind::kReduce, "reduce", -1, {0, 1});
  g.mutable_op(op).root = 0;
  g.mutable_op(op).var_names = {"w@GRAD"};
  for (int p = 0; p < 2; ++p) g.AddInput(op, g.ReadVar("w@GRAD", p));
  const int off_root = g.WriteVar(op, "w@GRAD", 1);
  const Status status = ValidateSsaGraph(g);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(g.OpLabel(op)));
  EXPECT_THAT(status.message(), HasSubstr(g.VarLabel(off_root)));
  EXPECT_THAT(status.message(), HasSubstr("root cpu:0"));
}

TEST(SsaValidate, ReduceOnItsRootPasses) {
  SsaGraph g = EmptyGraph(2);
  const int op = g.AddOp(SsaOpKind::kReduce, "reduce", -1, {0, 1});
  g.mutable_op(op).root = 1;
  for (int p = 0; p < 2; ++p) g.AddInput(op, g.ReadVar("w@GRAD", p));
  g.WriteVar(op, "w@GRAD", 1);
  const Status status = ValidateSsaGraph(g);
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(SsaValidate, BroadcastReadingOffItsRoot) {
  SsaGraph g = EmptyGraph(2);
  const int op = g.AddOp(SsaOpKind::kBroadcast, "broadcast", -1, {0, 1});
  g.mutable_op(op).root = 0;
  const int off_root = g.ReadVar("w", 1);
  g.AddInput(op, off_root);
  g.WriteVar(op, "w", 1);
  const Status status = ValidateSsaGraph(g);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(g.VarLabel(off_root)));
  EXPECT_THAT(status.message(), HasSubstr("broadcast reads only on its root"));
}

TEST(SsaValidate, ReduceRootOutsideItsPlaces) {
  SsaGraph g = EmptyGraph(3);
  const int op = g.AddOp(SsaOpKind::kReduce, "reduce", -1, {0, 1});
  g.mutable_op(op).root = 2;
  const Status status = ValidateSsaGraph(g);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("root cpu:2"));
}

TEST(SsaValidate, CollectiveVarOnAPlaceItDoesNotList) {
  SsaGraph g = EmptyGraph(3);
  const int op = g.AddOp(SsaOpKind::kAllReduce, "all_reduce", -1, {0, 1});
  g.AddInput(op, g.ReadVar("g", 0));
  const int stray = g.ReadVar("g", 2);
  g.AddInput(op, stray);
  const Status status = ValidateSsaGraph(g);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(g.VarLabel(stray)));
  EXPECT_THAT(status.message(), HasSubstr("does not list among its places"));
}

TEST(SsaValidate, CollectiveWithoutPlaces) {
  SsaGraph g = EmptyGraph(2);
  const int op = g.AddOp(SsaOpKind::kAllGather, "all_gather", -1, {});
  const Status status = ValidateSsaGraph(g);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(g.OpLabel(op)));
  EXPECT_THAT(status.message(), HasSubstr("lists no places"));
}

TEST(SsaValidate, ComputationOnAPlaceOutOfRange) {
  SsaGraph g = EmptyGraph(2);
  const int op = g.AddOp(SsaOpKind::kComputation, "relu", 0, {0});
  g.mutable_op(op).place = 5;
  const Status status = ValidateSsaGraph(g);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("place #5 (out of range)"));
}

// The API keeps both sides of every link; mutable_op can break one side.
TEST(SsaValidate, InputThatDoesNotListTheOpAsReader) {
  SsaGraph g = EmptyGraph(1);
  const int a = g.AddOp(SsaOpKind::kComputation, "relu", 0, {0});
  const int x = g.ReadVar("x", 0);
  g.mutable_op(a).inputs.push_back(x);
  const Status status = ValidateSsaGraph(g);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(),
              HasSubstr(g.OpLabel(a) + " reads " + g.VarLabel(x)));
  EXPECT_THAT(status.message(), HasSubstr("does not list the op as a reader"));
}

TEST(SsaValidate, OutputOfAnotherGenerator) {
  SsaGraph g = EmptyGraph(1);
  const int a = g.AddOp(SsaOpKind::kComputation, "relu", 0, {0});
  const int y = g.WriteVar(a, "y", 0);
  const int b = g.AddOp(SsaOpKind::kComputation, "scale", 0, {0});
  g.mutable_op(b).outputs.push_back(y);
  const Status status = ValidateSsaGraph(g);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(g.OpLabel(b)));
  EXPECT_THAT(status.message(), HasSubstr(g.OpLabel(a)));
  EXPECT_THAT(status.message(), HasSubstr("at most one generator"));
}

TEST(SsaValidate, GeneratorThatDoesNotListItsOutput) {
  SsaGraph g = EmptyGraph(1);
  const int a = g.AddOp(SsaOpKind::kComputation, "relu", 0, {0});
  const int y = g.WriteVar(a, "y", 0);
  g.mutable_op(a).outputs.clear();
  const Status status = ValidateSsaGraph(g);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(g.VarLabel(y)));
  EXPECT_THAT(status.message(), HasSubstr("does not list it as an output"));
}

TEST(SsaValidate, RemovedControlVarsAreSkippedButNotListed) {
  StepGraph s = BuildStepGraph();
  ASSERT_TRUE(ValidateSsaGraph(s.graph).ok());
  s.graph.mutable_op(s.fetch).inputs.push_back(s.removed_control);
  const Status status = ValidateSsaGraph(s.graph);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("reads removed var"));
  EXPECT_THAT(status.message(), HasSubstr(s.graph.OpLabel(s.fetch)));
}

TEST(SsaValidate, VarIdOutOfRangeIsReportedNotDereferenced) {
  SsaGraph g = EmptyGraph(1);
  const int a = g.AddOp(SsaOpKind::kComputation, "relu", 0, {0});
  g.mutable_op(a).outputs.push_back(999);
  const Status status = ValidateSsaGraph(g);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("var #999 (out of range)"));
}

TEST(SsaValidate, ControlEdgesAcrossPlacesAreAllowed) {
  // Shared CPU parameters order a reader on one place before the owner's
  // writer on another with a control var; placement rules are for data.
  SsaGraph g = EmptyGraph(2);
  const int reader = g.AddOp(SsaOpKind::kComputation, "mul", 1, {1});
  g.AddInput(reader, g.ReadVar("w", 1));
  const int writer = g.AddOp(SsaOpKind::kComputation, "sgd", 0, {0});
  g.AddInput(writer, g.ReadVar("w", 0));
  g.WriteVar(writer, "w", 0);
  g.AddControlEdge(reader, writer, ControlReason::kWriteAfterRead);
  const Status status = ValidateSsaGraph(g);
  EXPECT_TRUE(status.ok()) << status.ToString();
}

// --- dot --------------------------------------------------------------------

TEST(SsaDump, DotOfHandBuiltGraphRendersWithGraphviz) {
  StepGraph s = BuildStepGraph();
  ExpectRendersWithGraphviz(s.graph, "step");
}

TEST(SsaDump, DotQuotesAwkwardNamesAndStillRenders) {
  SsaGraph g = EmptyGraph(2);
  const int op = g.AddOp(SsaOpKind::kComputation, "my \"op\"\\x", 0, {0});
  g.AddInput(op, g.ReadVar("a/b.c@GRAD \"q\" \\ {x} -> y;", 0));
  g.WriteVar(op, "out\nline", 0);
  const std::string dot = SsaGraphToDot(g);
  EXPECT_THAT(dot, HasSubstr("my \\\"op\\\"\\\\x"));
  EXPECT_THAT(dot, HasSubstr("a/b.c@GRAD \\\"q\\\" \\\\ {x} -> y;@0@cpu:0"));
  EXPECT_THAT(dot, HasSubstr("out\\nline@0@cpu:0"));
  ExpectRendersWithGraphviz(g, "awkward");
}

TEST(SsaDump, DotStylesNodesByKind) {
  StepGraph s = BuildStepGraph();
  const std::string dot = SsaGraphToDot(s.graph);
  EXPECT_EQ(dot.rfind("digraph ssa {", 0), 0u);
  EXPECT_THAT(dot, HasSubstr("\"op0\" [label=\"#0 mul\\ncpu:0\", shape=box"));
  EXPECT_THAT(dot, HasSubstr("all_reduce\\ncpu:0,cpu:1\\nfc_0.w_0@GRAD\", "
                             "shape=hexagon"));
  EXPECT_THAT(dot, HasSubstr("scale 0.5\", shape=invhouse"));
  EXPECT_THAT(dot, HasSubstr("shape=cds"));
  EXPECT_THAT(dot, HasSubstr("label=\"fc_0.w_0@1@cpu:1\", shape=ellipse"));
  EXPECT_THAT(dot, HasSubstr("shape=point"));
  EXPECT_THAT(dot, HasSubstr("style=dashed"));
  // The removed control var is neither a node nor an edge.
  const std::string removed =
      "\"var" + std::to_string(s.removed_control) + "\"";
  EXPECT_THAT(dot, Not(HasSubstr(removed)));
}

// --- json -------------------------------------------------------------------

TEST(SsaDump, JsonMatchesTheGraph) {
  StepGraph s = BuildStepGraph();
  SsaGraph& g = s.graph;
  g.loss_name = "loss";
  g.strategy.reduce = BuildStrategy::ReduceStrategy::kReduce;
  g.strategy.gradient_scale = BuildStrategy::GradientScale::kOne;
  GradInfo grad;
  grad.param = "fc_0.w_0";
  grad.grad = "fc_0.w_0@GRAD";
  grad.numel = 12;
  grad.bytes = 48;
  grad.owner = 1;
  grad.collective = s.all_reduce;
  g.grads.push_back(grad);
  g.buckets.push_back(GradBucket{{"fc_0.w_0@GRAD"}, 48, s.all_reduce});
  g.memory_plan.buffer_of = {{{"y", 0}}, {{"y", 1}}};
  g.memory_plan.buffer_bytes = {256, 256};
  g.memory_plan.buffer_place = {0, 1};
  g.memory_plan.bytes_without_reuse = 1024;
  g.memory_plan.bytes_with_reuse = 512;

  const nlohmann::json j = nlohmann::json::parse(SsaGraphToJson(g));
  EXPECT_EQ(j["places"], nlohmann::json({"cpu:0", "cpu:1"}));
  EXPECT_EQ(j["loss_name"], "loss");
  EXPECT_EQ(j["strategy"]["reduce"], "reduce");
  EXPECT_EQ(j["strategy"]["gradient_scale"], "one");
  EXPECT_EQ(j["strategy"]["fuse_all_reduce_ops"], false);

  ASSERT_EQ(j["ops"].size(), g.ops().size());
  int live_vars = 0;
  for (const SsaVar& v : g.vars()) live_vars += !g.removed(v.id);
  ASSERT_EQ(j["vars"].size(), static_cast<size_t>(live_vars));
  ASSERT_EQ(static_cast<size_t>(live_vars), g.vars().size() - 1);

  const nlohmann::json& ar = j["ops"][s.all_reduce];
  EXPECT_EQ(ar["id"], s.all_reduce);
  EXPECT_EQ(ar["kind"], "all_reduce");
  EXPECT_TRUE(ar["place"].is_null());
  EXPECT_EQ(ar["places"], nlohmann::json({"cpu:0", "cpu:1"}));
  EXPECT_EQ(ar["var_names"], nlohmann::json({"fc_0.w_0@GRAD"}));
  EXPECT_EQ(ar["inputs"].size(), 2u);
  EXPECT_EQ(ar["outputs"].size(), 2u);
  const nlohmann::json& mul1 = j["ops"][s.mul[1]];
  EXPECT_EQ(mul1["kind"], "computation");
  EXPECT_EQ(mul1["type"], "mul");
  EXPECT_EQ(mul1["place"], "cpu:1");

  bool saw_control = false;
  for (const nlohmann::json& v : j["vars"]) {
    EXPECT_NE(v["id"], s.removed_control);
    const SsaVar& var = g.var(v["id"].get<int>());
    EXPECT_EQ(v["name"], var.name);
    EXPECT_EQ(v["version"], var.version);
    EXPECT_EQ(v["generator"], var.generator);
    EXPECT_EQ(v["readers"].get<std::vector<int>>(), var.readers);
    EXPECT_EQ(v["control"], ControlReasonName(var.control));
    saw_control |= v["control"] == "write-after-read";
  }
  EXPECT_TRUE(saw_control);

  ASSERT_EQ(j["grads"].size(), 1u);
  EXPECT_EQ(j["grads"][0]["owner"], "cpu:1");
  EXPECT_EQ(j["grads"][0]["bytes"], 48);
  EXPECT_EQ(j["buckets"][0]["op"], s.all_reduce);
  EXPECT_EQ(j["memory_plan"]["bytes_without_reuse"], 1024);
  EXPECT_EQ(j["memory_plan"]["bytes_with_reuse"], 512);
  EXPECT_EQ(j["memory_plan"]["num_buffers"], 2);
  EXPECT_EQ(j["memory_plan"]["buffers"][1]["place"], "cpu:1");
  EXPECT_EQ(j["memory_plan"]["buffers"][1]["vars"], nlohmann::json({"y"}));
}

TEST(SsaDump, JsonIsDeterministic) {
  const StepGraph a = BuildStepGraph();
  const StepGraph b = BuildStepGraph();
  EXPECT_EQ(SsaGraphToJson(a.graph), SsaGraphToJson(b.graph));
  EXPECT_EQ(SsaGraphToDot(a.graph), SsaGraphToDot(b.graph));
}

TEST(SsaDump, WritesFilesAndReportsABadPath) {
  std::filesystem::create_directories(PAREX_TEST_TMP_DIR);
  const StepGraph s = BuildStepGraph();
  const std::string json_path = TmpPath("step.json");
  const Status written = WriteSsaGraphJson(s.graph, json_path);
  ASSERT_TRUE(written.ok()) << written.ToString();
  StatusOr<std::string> bytes = ReadFileBytes(json_path);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(*bytes, SsaGraphToJson(s.graph));

  const std::string bad = TmpPath("no/such/dir/step.dot");
  const Status failed = WriteSsaGraphDot(s.graph, bad);
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.message(), HasSubstr("no/such/dir"));
}

// --- the multi-device builder's output --------------------------------------

TEST(SsaDump, DigitsMlpTrainingGraphOnTwoPlacesRendersWithGraphviz) {
  const ExampleProgram prog = testing::TrainingProgram(ExampleKind::kDigitsMlp);
  StatusOr<SsaGraph> graph = BuildMultiDeviceGraph(
      prog.main, testing::CpuPlaces(2), prog.loss, BuildStrategy{});
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  const Status valid = ValidateSsaGraph(*graph);
  ASSERT_TRUE(valid.ok()) << valid.ToString();
  ExpectRendersWithGraphviz(*graph, "digits_mlp");
  const nlohmann::json j = nlohmann::json::parse(SsaGraphToJson(*graph));
  EXPECT_EQ(j["ops"].size(), graph->ops().size());
  EXPECT_EQ(j["grads"].size(), graph->grads.size());
}

// Every strategy's graph passes validation and dumps; the Reduce-mode one
// (reduce and broadcast handles, control vars across places) renders.
TEST(SsaDump, DigitsMlpGraphsOfEachStrategyValidateAndDump) {
  const ExampleProgram prog = testing::TrainingProgram(ExampleKind::kDigitsMlp);
  struct Case {
    const char* name;
    BuildStrategy strategy;
  };
  std::vector<Case> cases(6);
  cases[0].name = "reduce_shared";
  cases[0].strategy.reduce = BuildStrategy::ReduceStrategy::kReduce;
  cases[1].name = "reduce_unshared";
  cases[1].strategy.reduce = BuildStrategy::ReduceStrategy::kReduce;
  cases[1].strategy.share_cpu_parameters = false;
  cases[2].name = "fused";
  cases[2].strategy.fuse_all_reduce_ops = true;
  cases[2].strategy.fuse_bucket_bytes = 4096;
  cases[3].name = "sequential";
  cases[3].strategy.enable_sequential_execution = true;
  cases[4].name = "memory_optimize";
  cases[4].strategy.memory_optimize = true;
  cases[5].name = "customized_scale";
  cases[5].strategy.gradient_scale = BuildStrategy::GradientScale::kCustomized;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    StatusOr<SsaGraph> graph = BuildMultiDeviceGraph(
        prog.main, testing::CpuPlaces(3), prog.loss, c.strategy);
    ASSERT_TRUE(graph.ok()) << graph.status().ToString();
    const Status valid = ValidateSsaGraph(*graph);
    EXPECT_TRUE(valid.ok()) << valid.ToString();
    const nlohmann::json j = nlohmann::json::parse(SsaGraphToJson(*graph));
    EXPECT_EQ(j["ops"].size(), graph->ops().size());
    EXPECT_EQ(j["strategy"]["reduce"], ReduceStrategyName(c.strategy.reduce));
    EXPECT_EQ(j["buckets"].size(), graph->buckets.size());
    EXPECT_EQ(j["memory_plan"]["num_buffers"],
              graph->memory_plan.buffer_bytes.size());
  }
  StatusOr<SsaGraph> reduce = BuildMultiDeviceGraph(
      prog.main, testing::CpuPlaces(3), prog.loss, cases[1].strategy);
  ASSERT_TRUE(reduce.ok()) << reduce.status().ToString();
  ExpectRendersWithGraphviz(*reduce, "digits_mlp_reduce");
}

}  // namespace
}  // namespace parex
