// Feeds: what a caller gives an executor for one step (a tensor per variable
// name), and the check of one fed value against its declaration. Shared by
// the reference executor and the ParallelExecutor.
#pragma once

#include <map>
#include <string>

#include "base/status.h"
#include "graph/ir/program.h"
#include "kernels/tensor.h"

namespace parex {

using FeedMap = std::map<std::string, Tensor>;

// Checks a value fed to `var` against its declaration: defined, the declared
// dtype, the declared rank and extents (-1 matches any). Errors name the feed.
Status CheckFeed(const VarDesc& var, const Tensor& value);

// A copy of `feed` with every tensor remade in memory from `allocator` (a
// ParallelExecutor's feed_allocator: pinned on CUDA places). Errors name the
// feed.
StatusOr<FeedMap> CopyFeed(const FeedMap& feed, Allocator* allocator);

}  // namespace parex
