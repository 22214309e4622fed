// The multi-device pass (Fluid's MultiDevSSAGraphBuilder, seed 000 and
// DESIGN.md §3.2): block 0 of a training or inference program becomes an
// SsaGraph over N places.
//
//  - every op is replicated once per place; feed ops are dropped (their
//    outputs are graph inputs, version 0) and fetch ops become fetch handles;
//  - the op of role Backward|Loss (the fill of loss@GRAD) becomes one
//    scale_loss_grad per place writing value/N (CoeffNumDevice), value (One),
//    or nothing (Customized: loss@GRAD is fed);
//  - right after the op that produces a parameter's gradient (op_role_var on
//    a Backward op) a collective merges it: all_reduce (dense), all_gather
//    (sparse rows), or in Reduce mode a reduce to the owner place, chosen as
//    the place with the least accumulated parameter elements so far; in
//    Reduce mode the Optimize ops of that parameter run on the owner only and
//    a broadcast of the updated parameter follows (none on CPU places that
//    share parameters);
//  - fuse_all_reduce_ops packs dense all-reduces into buckets;
//  - sync_batch_norm (and a program's own sync_batch_norm ops), over more
//    than one place in the world: training batch norms become the stages of
//    graph/builder/sync_batch_norm.h, each stage's sums all-reduced after it;
//  - data hazards are ordered with control vars, added only where the graph
//    does not already order the two ops (so each one is necessary):
//    write-after-read (a reader of version k before the writer of k+1) and
//    write-after-write (writer of k before writer of k+1);
//  - ops with no outputs get a control output; fetch handles read the newest
//    version on every place;
//  - enable_sequential_execution chains each place's computation ops in
//    program order; memory_optimize attaches a buffer-reuse plan.
// The result is validated (ValidateSsaGraph) before it is returned.
#pragma once

#include <string>
#include <vector>

#include "base/place.h"
#include "base/status.h"
#include "graph/ir/program.h"
#include "graph/ssa/ssa_graph.h"

namespace parex {

// Errors (InvalidArgument / FailedPrecondition) name the op, var and place:
// no places; an unknown loss var; gradient ops without a Backward|Loss op
// (a missing loss); op_role_var naming a var that is not a persistable of
// block 0, or a gradient its op does not write; an op writing one var
// twice; an unknown fetch target; Reduce mode with an optimizer op reading
// gradients owned by several places (global-norm clipping).
StatusOr<SsaGraph> BuildMultiDeviceGraph(
    const Program& program, const std::vector<Place>& places,
    const std::string& loss_name, const BuildStrategy& strategy,
    const std::vector<std::string>& fetch_names = {});

// Reduce mode: the parameter elements each place owns (its optimizer work);
// max/min of it is the ownership balance. All zeros in AllReduce mode.
std::vector<int64_t> OwnedElements(const SsaGraph& graph);

}  // namespace parex
