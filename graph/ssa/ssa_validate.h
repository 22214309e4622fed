// Validation of an SsaGraph.
#pragma once

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

}  // namespace parex
