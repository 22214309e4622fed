// Message flows asserted from the trace (issue 5, acceptance 2): the
// all-reduce of a gradient starts after every place produced it and ends
// before any optimizer op reads it; in Reduce mode the broadcast of a
// parameter follows its owner's optimizer op; no op of step k+1 reads a
// parameter before step k updated it; collectives run in one fixed order;
// every message is received; the Chrome trace parses.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "actors/parallel_executor.h"
#include "apps/models.h"
#include "graph/op_role.h"

namespace parex {
namespace {

using Mode = BuildStrategy::ReduceStrategy;

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

void CheckFlows(Mode mode, bool fuse_chains) {
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
        if (op.kind == SsaOpKind::kComputation && op.program_op == info.program_op) {
          EXPECT_TRUE(trace.EndsBefore(step, op.id, c)) << g.OpLabel(op.id);
        }
        if (IsOptimizer(g, op, info.param)) {
          EXPECT_TRUE(trace.EndsBefore(step, c, op.id)) << g.OpLabel(op.id);
          if (mode == Mode::kReduce) {
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
  // op handle per step, or per chain of op handles when chains are fused.
  const std::vector<TraceMessage> messages = trace.Messages();
  if (fuse_chains) {
    EXPECT_LT(messages.size(), g.ops().size() * kSteps);
  } else {
    EXPECT_EQ(messages.size(), g.ops().size() * kSteps);
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

TEST(ParallelTraceTest, AllReduceFlows) { CheckFlows(Mode::kAllReduce, true); }
TEST(ParallelTraceTest, AllReduceFlowsOneActorPerOp) {
  CheckFlows(Mode::kAllReduce, false);
}
TEST(ParallelTraceTest, ReduceAndBroadcastFlows) { CheckFlows(Mode::kReduce, true); }

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
