// Validation and dumps of an SsaGraph.
#pragma once

#include <string>

#include "base/status.h"
#include "graph/ssa/ssa_graph.h"

namespace parex {

// Structural checks: the graph is acyclic; every var has at most one
// generator and the generator lists it as an output; every reader lists it
// as an input; versions of (name, place) are numbered 0.. with version 0 the
// only one without a generator and every other version generated; an op's
// inputs and outputs exist and are not removed; data vars are placed
// consistently (a computation / scale_loss_grad op reads and writes data
// vars of its own place only; a collective's vars lie on places it lists;
// reduce writes only on its root, broadcast reads only on its root).
// Control vars carry no data and may join ops of different places (the
// read-after-write edges of shared parameters). Errors name the op, the var
// (name@version@place) and the place.
Status ValidateSsaGraph(const SsaGraph& graph);

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
