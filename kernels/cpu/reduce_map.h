// The element map of a reduction (reduce_*, logsumexp, norms): X full, Out
// viewed with X's rank and 1s on the reduced dims (kernels/cpu/broadcast.h).
#pragma once

#include <string>
#include <vector>

#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/cpu_kernels.h"

namespace parex::cpu {

// The map from X to Out of reduce_* (attributes dim, reduce_all;
// logsumexp's dims attribute is "axis").
inline Status BuildReduceMap(const KernelContext& ctx, const Dims& x,
                             BroadcastMap* map, const char* dims_attr = "dim") {
  const int rank = static_cast<int>(x.size());
  if (rank > BroadcastMap::kMaxRank) {
    return ctx.Error("rank " + std::to_string(rank) + " is above the " +
                     "supported " + std::to_string(BroadcastMap::kMaxRank));
  }
  const std::vector<int> dims = ctx.Attr<std::vector<int>>(dims_attr);
  const bool all = ctx.Attr<bool>("reduce_all") || dims.empty();
  int64_t out_extents[BroadcastMap::kMaxRank];
  for (int d = 0; d < rank; ++d) out_extents[d] = all ? 1 : x[d];
  for (int d : dims) {
    if (d < -rank || d >= rank) {
      return ctx.Error("dim " + std::to_string(d) +
                       " is out of range for X of rank " +
                       std::to_string(rank));
    }
    out_extents[d < 0 ? d + rank : d] = 1;
  }
  if (!map->Init(x, out_extents)) return ctx.Error("bad reduction dims");
  return Status::Ok();
}

}  // namespace parex::cpu
