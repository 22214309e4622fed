// Message flows asserted from the trace (issue 5, acceptance 2): the
// all-reduce of a gradient starts after every place produced it and ends
// before any optimizer op reads it; in Reduce mode the broadcast of a
// parameter follows its owner's optimizer op; no op of step k+1 reads a
// parameter before step k updated it; collectives run in one fixed order;
// every message is received; the Chrome trace parses.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "actors/executor/parallel_executor.h"
#include "graph/builder/examples.h"
#include "graph/ir/op_role.h"
#include "kernels/example_feed.h"
#include "kernels/reference_executor.h"

namespace parex {
namespace {

using ReduceMode = BuildStrategy::ReduceStrategy;

FeedMap Batch(const ExampleProgram& ex, int64_t rows) {
  FeedMap feed;
  Tensor x(DType::kFP32, {rows, 64});
  Tensor y(DType::kInt64, {rows, 1});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = (i % 13) * 0.1f;
  for (int64_t i = 0; i < rows; ++i) y.data<int64_t>()[i] = i % 10;
  feed[ex.input] = x;
  feed[ex.label] = y;
  return feed;
}

bool IsOptimizer(const SsaGraph& g, const SsaOp& op, const std::string& param) {
  if (op.kind != SsaOpKind::kComputation) return false;
  const OpDesc& desc = g.program().global_block().op(op.program_op);
  const std::vector<std::string> role_var = OpRoleVar(desc);
  return (OpRole(desc) & kOpRoleOptimize) != 0 && !role_var.empty() &&
         role_var[0] == param;
}

void CheckFlows(ReduceMode mode, bool fuse_chains) {
  StatusOr<ExampleProgram> ex = BuildExample(ExampleKind::kDigitsMlp);
  ASSERT_TRUE(ex.ok());
  Scope scope;
  ReferenceExecutor startup;
  ASSERT_TRUE(startup.Run(ex->startup, &scope, {}, {}).ok());
  TraceRecorder trace;
  BuildStrategy build;
  build.reduce = mode;
  build.share_cpu_parameters = false;  // broadcasts on CPU too
  ExecutionStrategy exec;
  exec.trace = &trace;
  exec.fuse_chains = fuse_chains;
  auto pe = ParallelExecutor::Create({Place::CPU(0), Place::CPU(1)}, ex->main,
                                     ex->loss, &scope, build, exec);
  ASSERT_TRUE(pe.ok()) << pe.status().ToString();
  const int kSteps = 3;
  for (int s = 0; s < kSteps; ++s) {
    ASSERT_TRUE((*pe)->Run(Batch(*ex, 16), {ex->loss}).ok());
  }
  const SsaGraph& g = (*pe)->graph();
  const int64_t first = (*pe)->steps_run() - kSteps;
  for (int64_t step = first; step < first + kSteps; ++step) {
    // Every op handle ran once in the step.
    for (const SsaOp& op : g.ops()) {
      ASSERT_TRUE(trace.FindSpan(step, op.id).has_value())
          << g.OpLabel(op.id) << " step " << step;
    }
    // The collectives of the places' communicator run one after another,
    // in the order the builder inserted them (the same on every rank).
    int previous = -1, collectives = 0;
    for (const SsaOp& op : g.ops()) {
      if (!IsCollective(op.kind)) continue;
      ++collectives;
      if (previous >= 0) {
        EXPECT_TRUE(trace.EndsBefore(step, previous, op.id))
            << g.OpLabel(previous) << " then " << g.OpLabel(op.id);
      }
      previous = op.id;
    }
    EXPECT_GE(collectives, 2);
    for (const GradInfo& info : g.grads) {
      SCOPED_TRACE(info.grad + " step " + std::to_string(step));
      const int c = info.collective;
      for (const SsaOp& op : g.ops()) {
        if (op.kind == SsaOpKind::kComputation &&
            op.program_op == info.program_op) {
          EXPECT_TRUE(trace.EndsBefore(step, op.id, c)) << g.OpLabel(op.id);
        }
        if (IsOptimizer(g, op, info.param)) {
          EXPECT_TRUE(trace.EndsBefore(step, c, op.id)) << g.OpLabel(op.id);
          if (mode == ReduceMode::kReduce) {
            EXPECT_EQ(op.place, info.owner);
            for (const SsaOp& b : g.ops()) {
              if (b.kind == SsaOpKind::kBroadcast &&
                  b.var_names[0] == info.param) {
                EXPECT_TRUE(trace.EndsBefore(step, op.id, b.id));
              }
            }
          }
          // Step k+1's readers of the parameter start after this update.
          if (step + 1 < first + kSteps) {
            for (const SsaOp& reader : g.ops()) {
              for (int v : reader.inputs) {
                if (g.var(v).name == info.param && g.var(v).version == 0) {
                  EXPECT_TRUE(trace.FindSpan(step, op.id)->task_end_ns <=
                              trace.FindSpan(step + 1, reader.id)->begin_ns)
                      << g.OpLabel(reader.id);
                }
              }
            }
          }
        }
      }
    }
  }
  // Every message was received after it was sent; one run message per
  // op handle per step, or per chain of op handles when chains are fused,
  // and the StepDone of each step.
  const std::vector<TraceMessage> messages = trace.Messages();
  if (fuse_chains) {
    EXPECT_LT(messages.size(), g.ops().size() * kSteps);
  } else {
    EXPECT_EQ(messages.size(), (g.ops().size() + 1) * kSteps);
  }
  for (const TraceMessage& m : messages) {
    EXPECT_GE(m.received_ns, m.sent_ns) << "flow " << m.flow;
  }
  nlohmann::json doc = nlohmann::json::parse((*pe)->TraceJson());
  int spans = 0, starts = 0, finishes = 0;
  for (const auto& e : doc["traceEvents"]) {
    spans += e["ph"] == "X";
    starts += e["ph"] == "s";
    finishes += e["ph"] == "f";
  }
  EXPECT_EQ(spans, static_cast<int>(g.ops().size()) * kSteps);
  EXPECT_EQ(starts, static_cast<int>(messages.size()));
  EXPECT_EQ(finishes, starts);
}

TEST(ParallelTraceTest, AllReduceFlows) {
  CheckFlows(ReduceMode::kAllReduce, true);
}
TEST(ParallelTraceTest, AllReduceFlowsOneActorPerOp) {
  CheckFlows(ReduceMode::kAllReduce, false);
}
TEST(ParallelTraceTest, ReduceAndBroadcastFlows) {
  CheckFlows(ReduceMode::kReduce, true);
}

// Issue 12, acceptance 1: one 2-place MLP step, message by message, between
// the named actor kinds: coordinator -> op actors (the roots); op actors ->
// the collective actor (the all_reduce of each @GRAD, once both places
// produced it); the collective actor -> the op actors of that parameter's
// sgd on each place; the step's last node -> the coordinator (StepDone). The
// Chrome trace shows the kinds as tracks.
TEST(ParallelTraceTest, OneStepsMessagesFlowBetweenTheNamedActorKinds) {
  StatusOr<ExampleProgram> ex = BuildExample(ExampleKind::kDigitsMlp);
  ASSERT_TRUE(ex.ok());
  Scope scope;
  ReferenceExecutor startup;
  ASSERT_TRUE(startup.Run(ex->startup, &scope, {}, {}).ok());
  TraceRecorder trace;
  ExecutionStrategy exec;
  exec.trace = &trace;
  auto pe = ParallelExecutor::Create({Place::CPU(0), Place::CPU(1)}, ex->main,
                                     ex->loss, &scope, {}, exec);
  ASSERT_TRUE(pe.ok()) << pe.status().ToString();
  ASSERT_TRUE((*pe)->Run(Batch(*ex, 16), {ex->loss}).ok());
  trace.Clear();
  ASSERT_TRUE((*pe)->Run(Batch(*ex, 16), {ex->loss}).ok());
  const int64_t step = (*pe)->steps_run() - 1;
  const SsaGraph& g = (*pe)->graph();
  auto kind = [&](int node) -> std::string {
    if (node < 0) return "coordinator";
    return IsCollective(g.op(node).kind) ? "collective actor" : "op actor";
  };
  std::vector<TraceMessage> messages;
  for (const TraceMessage& m : trace.Messages()) {
    if (m.step == step) messages.push_back(m);
  }
  // coordinator -> op actors.
  int from_coordinator = 0;
  for (const TraceMessage& m : messages) {
    if (m.sender != -1) continue;
    ++from_coordinator;
    EXPECT_EQ(kind(m.receiver), "op actor") << g.OpLabel(m.receiver);
    EXPECT_EQ(std::string(MessageTypeOf(m)), "RunNode");
  }
  EXPECT_GE(from_coordinator, 2) << "one root per place at least";
  int all_reduces = 0;
  for (const GradInfo& info : g.grads) {
    SCOPED_TRACE(info.grad);
    const int c = info.collective;
    ASSERT_EQ(g.op(c).kind, SsaOpKind::kAllReduce);
    ++all_reduces;
    // op actors -> collective actor: one RunNode, from the place that
    // produced the gradient last; both places produced it before.
    std::vector<int> producers;
    for (int v : g.op(c).inputs) {
      if (g.var(v).generator >= 0) producers.push_back(g.var(v).generator);
    }
    ASSERT_EQ(producers.size(), 2u);
    EXPECT_NE(g.op(producers[0]).place, g.op(producers[1]).place);
    int into = 0;
    for (const TraceMessage& m : messages) {
      if (m.receiver != c) continue;
      ++into;
      EXPECT_EQ(kind(m.sender), "op actor");
      EXPECT_TRUE(m.sender == producers[0] || m.sender == producers[1])
          << g.OpLabel(m.sender);
    }
    EXPECT_EQ(into, 1);
    for (int p : producers) EXPECT_TRUE(trace.EndsBefore(step, p, c));
    // collective actor -> the op actor of each place's sgd of the parameter.
    int optimizers = 0;
    for (const SsaOp& op : g.ops()) {
      if (!IsOptimizer(g, op, info.param)) continue;
      ++optimizers;
      EXPECT_TRUE(trace.EndsBefore(step, c, op.id)) << g.OpLabel(op.id);
      bool told = false;
      for (const TraceMessage& m : messages) {
        told = told || (m.sender == c && m.receiver == op.id);
      }
      EXPECT_TRUE(told) << "no message " << g.OpLabel(c) << " -> "
                        << g.OpLabel(op.id);
      EXPECT_EQ(kind(op.id), "op actor");
    }
    EXPECT_EQ(optimizers, 2);
  }
  EXPECT_GE(all_reduces, 4);  // two fc layers: weights and biases
  // The step's last node -> coordinator, exactly once, after every span.
  int done = 0;
  for (const TraceMessage& m : messages) {
    if (m.receiver != -1) continue;
    ++done;
    EXPECT_EQ(std::string(MessageTypeOf(m)), "StepDone");
    for (const TraceSpan& s : trace.Spans()) {
      if (s.step == step) {
        EXPECT_LE(s.task_end_ns, m.sent_ns);
      }
    }
  }
  EXPECT_EQ(done, 1);
  // The trace JSON: the kinds are tracks, and spans sit on their kind's.
  nlohmann::json doc = nlohmann::json::parse((*pe)->TraceJson());
  std::map<std::pair<int, int>, std::string> tracks;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      tracks[{e["pid"].get<int>(), e["tid"].get<int>()}] =
          e["args"]["name"].get<std::string>();
    }
  }
  int on_collective_track = 0, on_op_track = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const int node = e["args"]["node"].get<int>();
    const std::string track =
        tracks[{e["pid"].get<int>(), e["tid"].get<int>()}];
    if (IsCollective(g.op(node).kind)) {
      EXPECT_EQ(track, "collective actor");
      ++on_collective_track;
    } else if (g.op(node).kind != SsaOpKind::kFetch) {
      EXPECT_EQ(track, "op actors");
      ++on_op_track;
    }
  }
  EXPECT_EQ(on_collective_track, all_reduces);
  EXPECT_GT(on_op_track, 20);
  bool coordinator_track = false;
  for (const auto& [key, name] : tracks)
    coordinator_track |= name == "coordinator";
  EXPECT_TRUE(coordinator_track);
}

TEST(ParallelTraceTest, OffRecordsNothing) {
  StatusOr<ExampleProgram> ex = BuildExample(ExampleKind::kDigitsMlp);
  ASSERT_TRUE(ex.ok());
  Scope scope;
  ReferenceExecutor startup;
  ASSERT_TRUE(startup.Run(ex->startup, &scope, {}, {}).ok());
  TraceRecorder trace(/*enabled=*/false);
  ExecutionStrategy exec;
  exec.trace = &trace;
  auto pe = ParallelExecutor::Create({Place::CPU(0), Place::CPU(1)}, ex->main,
                                     ex->loss, &scope, {}, exec);
  ASSERT_TRUE(pe.ok());
  ASSERT_TRUE((*pe)->Run(Batch(*ex, 8), {ex->loss}).ok());
  EXPECT_TRUE(trace.Spans().empty());
  EXPECT_TRUE(trace.Messages().empty());
}

}  // namespace
}  // namespace parex
