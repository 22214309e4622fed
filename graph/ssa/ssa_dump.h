// Dumps of an SsaGraph (validation: ssa_validate.h).
#pragma once

#include <string>

#include "base/status.h"
#include "graph/ssa/ssa_graph.h"

namespace parex {

// Graphviz dot: one node per op (shape and colour by kind, label type and
// place) and per var (label name@version@place; control vars dashed and
// small), edges var -> reader and generator -> var. Renders with `dot`.
std::string SsaGraphToDot(const SsaGraph& graph);

// JSON: {"places": [...], "strategy": {...}, "ops": [{"id", "kind", "type",
// "place", "places", "program_op", "inputs", "outputs", "var_names", "root",
// "scale"}], "vars": [{"id", "name", "version", "place", "control",
// "generator", "readers"}], "grads": [...], "buckets": [...],
// "memory_plan": {...}}; removed control vars are left out.
std::string SsaGraphToJson(const SsaGraph& graph);

// Writes the dot / JSON text to `path` atomically (tmp + rename).
Status WriteSsaGraphDot(const SsaGraph& graph, const std::string& path);
Status WriteSsaGraphJson(const SsaGraph& graph, const std::string& path);

}  // namespace parex
