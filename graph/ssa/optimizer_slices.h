// Optimizer ops that can run as slices (issue 13): an update that is
// elementwise over its parameter, so that element ranges of the parameter,
// its gradient and its accumulators can be updated independently, each by a
// different place, with the same bits as one op over the whole. Reduce mode
// with shared CPU parameters splits a large parameter's optimizer op so (the
// builder in multi_device_builder.cc, the runner in
// actors/executor/op_handle_tasks.cc).
#pragma once

#include <string>
#include <vector>

#include "graph/ir/program.h"
#include "graph/ssa/ssa_graph.h"

namespace parex {

struct OptimizerSlots {
  // Same element count as Param, updated element by element.
  std::vector<std::string> sliced_inputs, sliced_outputs;
  // Read whole by every slice (learning rate, beta powers); outputs among
  // them are written once, by the op that finishes the slices.
  std::vector<std::string> scalar_inputs, scalar_outputs;
  // A duplicable input whose gradients the kernel adds onto Grad's, in
  // order, before updating (adam's GradAddends), or empty. Given one, a slice
  // that finishes its gradient's reduce reads every place's gradient there
  // instead of summing into the owner's first: one pass over the range.
  std::string grad_addends;
};

// The slots of optimizer `type` when it can run as slices, else nullptr.
const OptimizerSlots* SliceableOptimizer(const std::string& type);

// Whether `op` can run as slices: a sliceable type that uses no slot outside
// its table (a master-weight or skip-update input, for instance) and updates
// its sliced vars in place.
bool CanSliceOptimizer(const OpDesc& op);

// The pass, on a graph the multi-device builder has made whole (fetches
// included): with shared parameters (Reduce mode on CPU places), every
// owner-placed optimizer op that CanSliceOptimizer and whose dense parameter
// has at least strategy.slice_optimizer_min_numel elements (and one per
// place) gets one slice per place (SsaOp::slice), ordered after the op's
// predecessors and before the op, which then updates no elements. When its
// gradient's reduce feeds nothing but the op, and memory_optimize is off,
// the slices also sum the gradient (SsaOp::sliced_reduce). No-op with
// sequential execution (its per-place program order has no place for them).
void SliceOptimizers(SsaGraph* graph);

// Elements [begin, end) of slice `k` of `n` over `numel` elements: balanced,
// contiguous, in order.
inline void SliceRange(int64_t numel, int k, int n, int64_t* begin,
                       int64_t* end) {
  *begin = numel * k / n;
  *end = numel * (k + 1) / n;
}

}  // namespace parex
