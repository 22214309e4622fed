// Optimizer ops that can run as slices (issue 13): an update that is
// elementwise over its parameter, so that element ranges of the parameter,
// its gradient and its accumulators can be updated independently, each by a
// different place, with the same bits as one op over the whole. Reduce mode
// with shared CPU parameters splits a large parameter's optimizer op so (the
// builder in multi_device_builder.cc, the runner in
// actors/op_handle_tasks.cc).
#pragma once

#include <string>
#include <vector>

#include "graph/ir/program.h"

namespace parex {

struct OptimizerSlots {
  // Same element count as Param, updated element by element.
  std::vector<std::string> sliced_inputs, sliced_outputs;
  // Read whole by every slice (learning rate, beta powers); outputs among
  // them are written once, by the op that finishes the slices.
  std::vector<std::string> scalar_inputs, scalar_outputs;
};

// The slots of optimizer `type` when it can run as slices, else nullptr.
const OptimizerSlots* SliceableOptimizer(const std::string& type);

// Whether `op` can run as slices: a sliceable type that uses no slot outside
// its table (a master-weight or skip-update input, for instance) and updates
// its sliced vars in place.
bool CanSliceOptimizer(const OpDesc& op);

// Elements [begin, end) of slice `k` of `n` over `numel` elements: balanced,
// contiguous, in order.
inline void SliceRange(int64_t numel, int k, int n, int64_t* begin,
                       int64_t* end) {
  *begin = numel * k / n;
  *end = numel * (k + 1) / n;
}

}  // namespace parex
