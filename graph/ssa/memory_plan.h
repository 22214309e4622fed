// memory_optimize: a liveness-based buffer-reuse plan over an SsaGraph.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace parex {

class SsaGraph;  // graph/ssa/ssa_graph.h, which holds a MemoryPlan

// memory_optimize: a buffer-reuse plan over (var name, place) storages.
// Filled by PlanMemory (below); empty when memory_optimize is off.
struct MemoryPlan {
  int64_t batch_per_place = 0;  // the batch size -1 extents were sized with
  // buffer_of[place][var name] = buffer index, for every planned temporary.
  // Persistables, feeds, fetch targets and control vars are never planned.
  std::vector<std::map<std::string, int>> buffer_of;
  std::vector<int64_t> buffer_bytes;  // per buffer: the largest var it holds
  std::vector<int> buffer_place;      // per buffer: its place
  int64_t bytes_without_reuse = 0;    // sum over planned storages
  int64_t bytes_with_reuse = 0;       // sum over buffers

  bool empty() const { return buffer_bytes.empty(); }
};

// Fills graph->memory_plan. A storage is a (var name, place) pair; the plan
// covers temporaries only: never persistables, feeds (version 0 without a
// generator), fetch targets (any var a fetch op reads), control vars,
// storages shared by every place, vars that are not LOD_TENSORs, or vars
// of unknown dtype or of unknown size (a 0 extent: only the kernel sizes
// them, as batch_norm's ReserveSpace). InvalidArgument when
// batch_per_place <= 0.
// Two storages may share a buffer only when the graph orders every access
// of one before every access of the other, whatever order the ops run in
// (judged with SsaReachability, not a single schedule). Bytes: numel with
// -1 extents replaced by `batch_per_place`, times the element size.
Status PlanMemory(SsaGraph* graph, int64_t batch_per_place);

// Proves graph.memory_plan safe: every pair of storages sharing a buffer is
// ordered as above, each buffer is at least as large as every storage in
// it, and no excluded var is planned. FailedPrecondition naming the buffer,
// both vars, the place and an unordered pair of ops otherwise.
Status CheckMemoryPlan(const SsaGraph& graph);

}  // namespace parex
