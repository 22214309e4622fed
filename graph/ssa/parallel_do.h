// The seeds' two older forms of data parallelism, as rewrites that feed the
// multi-device pass (multi_device_builder.h).
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

// The multi-thread transpile (seed 003): one program, N threads, one copy of
// the parameters. Every fed var X is split along dim 0 into X@THREAD@0..N-1
// (`split`), the forward and backward ops are replicated per thread with
// their non-persistable vars renamed `<name>@THREAD@<t>`, each parameter
// gradient is merged as `sum` of the threads' copies scaled by 1/N
// (`scale`, which carries op_role_var, so the result also builds on several
// places), and the optimizer ops run once on the merged gradients. The loss
// of thread t is `<loss>@THREAD@<t>`; `loss` is their mean. The fill of
// loss@GRAD (op_role Backward|Loss) stays one op; each thread's
// `loss@GRAD@THREAD@t` is a copy of it (`scale` by 1).
// The result runs on one place (the reference executor, or a 1-place
// SsaGraph whose out-of-order execution gives the threads' parallelism).
StatusOr<Program> TranspileMultiThread(const Program& program,
                                       const std::string& loss,
                                       const std::vector<std::string>& feeds,
                                       int num_threads);

}  // namespace parex
