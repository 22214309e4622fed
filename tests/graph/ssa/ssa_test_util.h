// Shared helpers of the SSA graph tests: the example training programs and
// small queries over a built graph.
#pragma once

#include <string>
#include <vector>

#include "base/place.h"
#include "graph/builder/examples.h"
#include "graph/ssa/ssa_graph.h"

namespace parex::testing {

// cpu:0 .. cpu:n-1.
std::vector<Place> CpuPlaces(int n);
// cuda:0 .. cuda:n-1 (pure data: building a graph needs no device).
std::vector<Place> CudaPlaces(int n);

// An example model with backward and optimizer (fp32); fails the test on
// error. `optimizer` defaults to the example's own (Adam / SGD).
ExampleProgram TrainingProgram(ExampleKind kind,
                               std::optional<OptimizerKind> optimizer = {});

// Ops of a kind; computation ops of a program op type.
int CountOps(const SsaGraph& graph, SsaOpKind kind);
int CountComputation(const SsaGraph& graph, const std::string& type);
// Control vars of a reason (removed ones excluded).
std::vector<int> ControlVars(const SsaGraph& graph, ControlReason reason);

}  // namespace parex::testing
