// SummarizeTrace on hand-made spans whose figures are worked out here.
#include "actors/trace/trace_summary.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace parex {
namespace {

TraceSpan Span(int64_t step, int node, int64_t begin_us, int64_t end_us,
               uint32_t thread) {
  TraceSpan s;
  s.step = step;
  s.node = node;
  s.begin_ns = begin_us * 1000;
  s.task_end_ns = end_us * 1000;
  s.end_ns = end_us * 1000;
  s.thread = thread;
  return s;
}

TEST(TraceSummaryTest, OverlapAndIdle) {
  // Nodes 0, 1 compute, node 2 a collective. Step 0 on 2 workers:
  //   worker 0: node 0 [0, 100)   worker 1: node 2 [50, 150)
  //   worker 0: node 1 [120, 200)
  // The collective overlaps compute during [50, 100) and [120, 150): 80 of
  // its 100 us are hidden. Wall 200 us, busy 280 of 400 worker-us.
  const std::vector<bool> collective = {false, false, true};
  std::vector<TraceSpan> spans = {Span(0, 0, 0, 100, 0), Span(0, 2, 50, 150, 1),
                                  Span(0, 1, 120, 200, 0)};
  TraceSummary s = SummarizeTrace(spans, collective, 2);
  EXPECT_EQ(s.steps, 1);
  EXPECT_DOUBLE_EQ(s.wall_ms, 0.2);
  EXPECT_DOUBLE_EQ(s.compute_ms, 0.18);
  EXPECT_DOUBLE_EQ(s.collective_ms, 0.1);
  EXPECT_DOUBLE_EQ(s.collective_hidden, 0.8);
  EXPECT_DOUBLE_EQ(s.scheduler_idle, 0.3);
  EXPECT_THAT(s.ToString(),
              ::testing::HasSubstr("(80% hidden behind compute)"));

  // A second step with a collective alone: nothing hidden there; walls add.
  spans.push_back(Span(1, 2, 1000, 1100, 1));
  s = SummarizeTrace(spans, collective, 2);
  EXPECT_EQ(s.steps, 2);
  EXPECT_DOUBLE_EQ(s.wall_ms, 0.3);
  EXPECT_DOUBLE_EQ(s.collective_hidden, 0.4);
  // No collective at all: 0% hidden, not a division by zero.
  EXPECT_EQ(
      SummarizeTrace({Span(0, 0, 0, 10, 0)}, collective, 1).collective_hidden,
      0);
  EXPECT_EQ(SummarizeTrace({}, collective, 2).steps, 0);
}

TEST(TraceSummaryTest, HiddenBehindBackward) {
  // Node 0 forward [0, 100), node 1 backward [100, 200), node 2 a
  // collective [50, 150): hidden behind compute 100%, behind backward only
  // [100, 150) = 50%.
  const std::vector<bool> collective = {false, false, true};
  const std::vector<bool> backward = {false, true, false};
  std::vector<TraceSpan> spans = {
      Span(0, 0, 0, 100, 0), Span(0, 1, 100, 200, 0), Span(0, 2, 50, 150, 1)};
  TraceSummary s = SummarizeTrace(spans, collective, 2, &backward);
  EXPECT_DOUBLE_EQ(s.collective_hidden, 1.0);
  EXPECT_DOUBLE_EQ(s.collective_hidden_backward, 0.5);
  EXPECT_THAT(s.ToString(),
              ::testing::HasSubstr(
                  "(100% hidden behind compute, 50% behind backward)"));
}

TEST(TraceSummaryTest, ParametersBroadcastsApartFromGradients) {
  // Nodes 1 and 2 are collectives: 1 reduces a gradient [0, 3) ms, 2
  // broadcasts the parameter [4, 5) ms. Without the broadcast flags the
  // line has no split.
  const std::vector<bool> collective = {false, true, true};
  const std::vector<bool> broadcast = {false, false, true};
  const std::vector<TraceSpan> spans = {Span(0, 0, 0, 4000, 0),
                                        Span(0, 1, 0, 3000, 1),
                                        Span(0, 2, 4000, 5000, 1)};
  const TraceSummary s =
      SummarizeTrace(spans, collective, 2, nullptr, &broadcast);
  EXPECT_DOUBLE_EQ(s.collective_ms, 4.0);
  EXPECT_DOUBLE_EQ(s.broadcast_ms, 1.0);
  EXPECT_THAT(s.ToString(),
              ::testing::HasSubstr("collectives 4.0 ms: gradients 3.0 ms, "
                                   "parameters' broadcasts 1.0 ms ("));
  EXPECT_THAT(SummarizeTrace(spans, collective, 2).ToString(),
              ::testing::Not(::testing::HasSubstr("broadcasts")));
}

}  // namespace
}  // namespace parex
