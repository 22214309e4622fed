// ReferenceExecutor: runs block 0 of a program op by op, in program order, on
// one CPU place. It is the correctness oracle for everything parallel in
// parex, so it stays simple: no graph, no threads, no reuse tricks.
//
// Variables: persistables (parameters, optimizer state) live in the caller's
// scope and survive runs; temporaries live in a child scope dropped at the
// end of each run.
// Thread-safety: one Run at a time per executor.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/ir/program.h"
#include "kernels/device_context.h"
#include "kernels/feed.h"
#include "kernels/scope.h"
#include "kernels/tensor.h"

namespace parex {

class ReferenceExecutor {
 public:
  explicit ReferenceExecutor(Place place = Place::CPU())
      : device_context_(place) {}

  // Runs block 0 once and returns the values of `fetch_names`, in order.
  // Feeds: a program with feed ops takes its feed ops' targets (every one
  // must be fed); other fed names are set directly and must be variables of
  // the program. A fed tensor must match the variable's dtype and its
  // declared extents (-1 matches any). Errors name the op, variable or feed.
  StatusOr<std::vector<Tensor>> Run(
      const Program& program, Scope* scope, const FeedMap& feeds,
      const std::vector<std::string>& fetch_names);

  CpuDeviceContext* device_context() { return &device_context_; }

 private:
  CpuDeviceContext device_context_;
};

}  // namespace parex
