#include "tests/graph/ssa/ssa_test_util.h"

#include <gtest/gtest.h>

namespace parex::testing {

std::vector<Place> CpuPlaces(int n) {
  std::vector<Place> places;
  for (int i = 0; i < n; ++i) places.push_back(Place::CPU(i));
  return places;
}

std::vector<Place> CudaPlaces(int n) {
  std::vector<Place> places;
  for (int i = 0; i < n; ++i) places.push_back(Place::CUDA(i));
  return places;
}

ExampleProgram TrainingProgram(ExampleKind kind,
                               std::optional<OptimizerKind> optimizer) {
  ExampleOptions options;
  options.optimizer = optimizer;
  StatusOr<ExampleProgram> built = BuildExample(kind, options);
  EXPECT_TRUE(built.ok()) << built.status().ToString();
  return std::move(built).value();
}

int CountOps(const SsaGraph& graph, SsaOpKind kind) {
  int n = 0;
  for (const SsaOp& op : graph.ops()) n += op.kind == kind;
  return n;
}

int CountComputation(const SsaGraph& graph, const std::string& type) {
  int n = 0;
  for (const SsaOp& op : graph.ops()) {
    n += op.kind == SsaOpKind::kComputation && op.type == type;
  }
  return n;
}

std::vector<int> ControlVars(const SsaGraph& graph, ControlReason reason) {
  std::vector<int> ids;
  for (const SsaVar& v : graph.vars()) {
    if (v.control == reason && !graph.removed(v.id)) ids.push_back(v.id);
  }
  return ids;
}

}  // namespace parex::testing
