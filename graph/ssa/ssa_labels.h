// Labels of an SsaGraph's vars, ops and places that are safe on a broken
// graph: validation (ssa_validate.h) and the dumps (ssa_dump.h) read ids
// straight from the graph's lists, so a broken graph may hold any integer
// where an id belongs. These never index with an id they have not
// range-checked, and never call SsaGraph::VarLabel / OpLabel on a place
// index out of range.
#pragma once

#include <cstddef>
#include <string>

#include "graph/ssa/ssa_graph.h"

namespace parex {

// 0 <= i < n.
bool IdInRange(int i, size_t n);

// The place's name, or "place #N (out of range)".
std::string SsaPlaceName(const SsaGraph& graph, int place);

// graph.VarLabel(id), or a label naming the bad id / place.
std::string SafeVarLabel(const SsaGraph& graph, int id);

// graph.OpLabel(id), or a label naming the bad id / place.
std::string SafeOpLabel(const SsaGraph& graph, int id);

}  // namespace parex
