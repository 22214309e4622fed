// parallel_do, the seeds' older form of data parallelism (seed 002), as a
// rewrite that feeds the multi-device pass (multi_device_builder.h); the
// multi-thread transpile (seed 003) is in multi_thread_transpile.h.
#pragma once

#include <string>
#include <vector>

#include "base/place.h"
#include "base/status.h"
#include "graph/ir/program.h"
#include "graph/ssa/ssa_graph.h"

namespace parex {

// parallel_do (seed 002): a block-0 `parallel_do` op (inputs Inputs,
// Parameters, Places; outputs Outputs, parallel_scopes; attr sub_block)
// and its `parallel_do_grad` become the plain program they stand for: the
// forward block's ops in place of parallel_do, the backward block's ops in
// place of parallel_do_grad (allreduce ops there dropped; the op producing
// each parameter's final gradient marked with op_role_var, so the
// multi-device pass merges it), the ops around them unchanged. Inputs are
// split by the executor's feed, Outputs merged by its fetch.
StatusOr<Program> FlattenParallelDo(const Program& program);

// Builds the SsaGraph of a parallel_do program: FlattenParallelDo, then
// BuildMultiDeviceGraph over `places`.
StatusOr<SsaGraph> BuildParallelDoGraph(const Program& program,
                                        const std::vector<Place>& places,
                                        const std::string& loss_name,
                                        const BuildStrategy& strategy);

}  // namespace parex
